//! An order of each epoch for a reshuffling FedAvg client's pooled rows, chosen by the update.
//! TabLeak gives every epoch rows of its own (Dimitrov et al., 2022), so each member's epoch
//! copy is its rows in that epoch's order; matched to the pooled rows, a copy says which row
//! each position held. Every member proposes the orders its copies give; the pooled rows laid
//! out in each proposal simulate an update, and the best fitting proposal is searched further by
//! rows of different local batches trading places within an epoch, kept only where the simulated
//! update fits the observed one better. With the orders the pooled rows replay the update as a
//! client in a known order does: the update can choose among the members' rows and cells
//! (`assess::update_choice`) and the ensemble can run again from them (`assess::refine`), each
//! epoch's copy starting at the rows in that epoch's order.
//!
//! The attack simulates each position with its label (the labels in the client's order, the same
//! every epoch), so a row only takes positions of its own label: each epoch's batches keep the
//! given order's mix of labels, which a reshuffled batch need not have (a build that let rows take
//! their labels across batches, each epoch simulated with its own, lost 1–2 points on Adult: the
//! search then fits the pooled rows' errors; docs/results/recipes.md). The orders are the layout
//! the attack's model replays best, not the client's: on Adult's momentum client at E = 5
//! (docs/results/recipes.md, seed 1) the client's rows replayed in the orders chosen fitted its
//! update at 1 − cos = 1.5e-3 (in its own orders, exactly), and the batches the orders chose
//! shared no more rows with the client's than chance.
use crate::assess::matching::{Rule, match_rows};
use crate::assess::search_bounds::ROUNDS;
use crate::assess::update_choice::{EpochOrders, best};
use crate::attack::inversion::ensemble::Members;
use crate::attack::inversion::setup::Setup;
use crate::client::fedavg::LocalTraining;
use crate::error::Result;
use crate::table::{Value, encode_rows};

/// Candidates simulated in one call: the host's memory for them is E·n·d floats each.
const CHUNK: usize = 256;
/// A change is kept where it lowers 1 − cos by more than this share (as `update_choice`).
const BETTER: f32 = 1e-4;

/// Each epoch's order: `orders[e][j]` is the pooled row the replay visits j-th in epoch e.
pub type Orders = Vec<Vec<usize>>;

/// `x` ([n, d], one client's rows) laid out as the client visits them: epoch after epoch, rows
/// `orders[e]` ([E·n, d]).
pub fn in_orders(x: &[f32], orders: &[Vec<usize>], d: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(orders.len() * x.len());
    for order in orders {
        for &i in order {
            out.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
    }
    out
}

impl Setup<'_> {
    /// The local training of a client that reshuffles its rows every epoch in several local
    /// batches, where the attack gave each epoch rows of its own: classifying, with every cell
    /// unknown and one round. None elsewhere (a known order needs no search).
    pub(crate) fn reshuffled(&self) -> Option<LocalTraining> {
        let (training, copies) = self.replayable_training()?;
        (!training.order_known(self.config.rows()) && copies == training.epochs).then_some(training)
    }

    /// The orders of a reshuffling client (`reshuffled`) for the pooled `rows`, as the module
    /// says; `encoded` are the rows encoded ([n, d]). None elsewhere.
    pub(crate) async fn choose_orders(
        &self,
        inversion: &Members,
        rows: &[Vec<Value>],
        encoded: &[f32],
    ) -> Result<Option<EpochOrders>> {
        let Some(training) = self.reshuffled() else {
            return Ok(None);
        };
        let (n, d, epochs) = (rows.len(), self.dataset.d(), training.epochs);
        let len = epochs * n * d;
        let labels = &self.scenario.labels;
        if inversion.x.len() != self.members * len || labels.len() != n {
            return Ok(None);
        }
        // Each member's orders: its epoch copies matched to the pooled rows.
        let proposals: Vec<Orders> = inversion
            .x
            .chunks_exact(len)
            .map(|member| {
                (0..epochs)
                    .map(|e| {
                        let copy: Vec<Vec<Value>> = member[e * n * d..(e + 1) * n * d]
                            .chunks_exact(d)
                            .map(|r| self.dataset.decode(r))
                            .collect();
                        matched_order(&self.rules, labels, rows, &copy)
                    })
                    .collect()
            })
            .collect();
        let laid: Vec<f32> = proposals.iter().flat_map(|o| in_orders(encoded, o, d)).collect();
        let fits = self.projected_losses_in(laid, proposals.len(), epochs).await?;
        let Some((k, &fit)) = best(&fits) else {
            return Ok(None);
        };
        let mut chosen = EpochOrders {
            order: proposals[k].clone(),
            fit_proposed: fit as f64,
            fit: fit as f64,
            simulations: proposals.len(),
        };
        for _ in 0..ROUNDS {
            if !self
                .trade_places(&mut chosen, encoded, training.local_batch, Some(labels))
                .await?
            {
                break;
            }
        }
        Ok(Some(chosen))
    }

    /// Orders for `rows` searched again from `chosen`, orders the update chose for other rows:
    /// rows trade places as in the choice, and a row may take a position of another label (the
    /// second layer's certificate adopts rows into the slots the ensemble left, whatever their
    /// labels: `Setup::client_fits`). The labels by position stay the server's.
    pub(crate) async fn orders_for_rows(&self, rows: &[Vec<Value>], chosen: &EpochOrders) -> Result<EpochOrders> {
        let Some(training) = self.reshuffled() else {
            return Ok(chosen.clone());
        };
        let (d, epochs) = (self.dataset.d(), chosen.order.len());
        let encoded = encode_rows(self.dataset, rows);
        let fit = self
            .projected_losses_in(in_orders(&encoded, &chosen.order, d), 1, epochs)
            .await?[0];
        let mut again = EpochOrders {
            fit: fit as f64,
            simulations: 1,
            ..chosen.clone()
        };
        for _ in 0..ROUNDS {
            if !self
                .trade_places(&mut again, &encoded, training.local_batch, None)
                .await?
            {
                break;
            }
        }
        Ok(again)
    }

    /// `projected_losses` of `members` candidates' rows ([members, n, d]), each laid out in
    /// `orders` where given (a reshuffling client's), the same every epoch where not.
    pub(crate) async fn losses_in_orders(
        &self,
        x: Vec<f32>,
        members: usize,
        orders: Option<&[Vec<usize>]>,
    ) -> Result<Vec<f32>> {
        let Some(orders) = orders else {
            return self.projected_losses(x, members).await;
        };
        let d = self.dataset.d();
        let n = x.len() / (members * d).max(1);
        let laid = x.chunks_exact(n * d).flat_map(|m| in_orders(m, orders, d)).collect();
        self.projected_losses_in(laid, members, orders.len()).await
    }

    /// One round of rows trading places within an epoch, for `encoded` rows ([n, d]) in
    /// `chosen`'s orders: every pair of positions in different local batches of an epoch tried
    /// (of one label where `labels`, by position, are given);
    /// the best change kept where it fits the update better, or the best changes that touch no
    /// position in common where together they fit better still. Whether anything changed.
    async fn trade_places(
        &self,
        chosen: &mut EpochOrders,
        encoded: &[f32],
        local_batch: usize,
        labels: Option<&[usize]>,
    ) -> Result<bool> {
        let (d, epochs) = (self.dataset.d(), chosen.order.len());
        let n = encoded.len() / d;
        let per_step = local_batch.max(1);
        let swaps: Vec<(usize, usize, usize)> = (0..epochs)
            .flat_map(|e| (0..n).flat_map(move |a| (a + 1..n).map(move |b| (e, a, b))))
            .filter(|&(_, a, b)| a / per_step != b / per_step && labels.is_none_or(|l| l[a] == l[b]))
            .collect();
        let mut losses = Vec::with_capacity(swaps.len());
        for chunk in swaps.chunks(CHUNK) {
            let laid: Vec<f32> = chunk
                .iter()
                .flat_map(|&swap| in_orders(encoded, &swapped(&chosen.order, &[swap]), d))
                .collect();
            losses.extend(self.projected_losses_in(laid, chunk.len(), epochs).await?);
        }
        chosen.simulations += swaps.len();
        // The improving swaps, best first; those touching no position another took are
        // tried together, and kept where they fit better than the best alone.
        let mut better: Vec<usize> = (0..swaps.len())
            .filter(|&k| losses[k] < chosen.fit as f32 * (1.0 - BETTER))
            .collect();
        if better.is_empty() {
            return Ok(false);
        }
        better.sort_by(|&a, &b| losses[a].total_cmp(&losses[b]));
        let mut taken: Vec<(usize, usize, usize)> = Vec::new();
        for &k in &better {
            let (e, a, b) = swaps[k];
            if !taken
                .iter()
                .any(|&(f, c, g)| f == e && (c == a || c == b || g == a || g == b))
            {
                taken.push(swaps[k]);
            }
        }
        let (mut orders, mut fit) = (swapped(&chosen.order, &taken[..1]), losses[better[0]]);
        if taken.len() > 1 {
            let together = swapped(&chosen.order, &taken);
            let loss = self
                .projected_losses_in(in_orders(encoded, &together, d), 1, epochs)
                .await?[0];
            chosen.simulations += 1;
            if loss < fit {
                (orders, fit) = (together, loss);
            }
        }
        chosen.order = orders;
        // An f32 loss, held exactly: the next round compares in f32 as before.
        chosen.fit = fit as f64;
        Ok(true)
    }
}

/// The order an epoch's `copy` gives the pooled `rows`: at each position the pooled row matched
/// to the copy's row there, among the rows of the position's label (`labels`, by position, as the
/// pooled rows hold them): the server simulates a position with its label.
fn matched_order(rules: &[Rule], labels: &[usize], rows: &[Vec<Value>], copy: &[Vec<Value>]) -> Vec<usize> {
    let mut order = vec![0; rows.len()];
    let mut classes: Vec<usize> = labels.to_vec();
    classes.sort_unstable();
    classes.dedup();
    for class in classes {
        let at: Vec<usize> = (0..labels.len()).filter(|&j| labels[j] == class).collect();
        let pick = |from: &[Vec<Value>]| at.iter().map(|&j| from[j].clone()).collect::<Vec<_>>();
        // matched[k]: the copy's position (of this label) matched to pooled row at[k].
        for (k, &m) in match_rows(rules, &pick(rows), &pick(copy)).iter().enumerate() {
            order[at[m]] = at[k];
        }
    }
    order
}

/// `orders` with positions a and b of epoch e traded, for each `(e, a, b)`.
fn swapped(orders: &[Vec<usize>], swaps: &[(usize, usize, usize)]) -> Orders {
    let mut out = orders.to_vec();
    for &(e, a, b) in swaps {
        out[e].swap(a, b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy's rows are matched to the pooled rows within each position's label: a row stands
    /// only where its label is, even where a row of the other label matches the copy better.
    #[test]
    fn a_copy_gives_each_position_a_row_of_its_label() {
        let rules = [Rule {
            categorical: true,
            tolerance: 0.0,
            follows: None,
        }];
        let row = |c: u32| vec![Value::Cat(c)];
        let rows = [row(0), row(1), row(2), row(3)];
        let labels = [0, 1, 0, 1];
        // The copy holds pooled rows 2, 3, 0, 1 in its positions: each of its position's label.
        assert_eq!(
            matched_order(&rules, &labels, &rows, &[row(2), row(3), row(0), row(1)]),
            vec![2, 3, 0, 1]
        );
        // Positions 0 and 1 hold rows of the other label: they take the rows of their own.
        let order = matched_order(&rules, &labels, &rows, &[row(1), row(0), row(2), row(3)]);
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert!((0..4).all(|j| labels[order[j]] == labels[j]), "{order:?}");
    }

    /// A reshuffling client's own rows, their orders searched from the listing's: two of them,
    /// at positions of different labels in different local batches, swapped in their slots (as
    /// the second layer's certificate adopts rows into the slots the ensemble left, whatever
    /// their labels) fit the update far worse in those orders, and the orders searched again,
    /// rows free to take positions of another label, fit it as well as before.
    #[test]
    fn rows_in_slots_of_another_label_are_laid_out_again_by_the_update() {
        use crate::client::fedavg::LocalOrder;
        use crate::config::{AttackConfig, Protocol};
        let training = LocalTraining {
            order: LocalOrder::Shuffled,
            ..LocalTraining::sgd(1, 4, 0.05)
        };
        let config = AttackConfig {
            batch_size: 8,
            hidden: vec![16],
            protocol: Protocol::Fedavg(training),
            seed: 3,
            ..Default::default()
        };
        crate::assess::with_sample_setup(config, |setup| {
            pollster::block_on(async {
                assert!(setup.reshuffled().is_some());
                let truth = setup.scenario.truth.as_ref().unwrap().rows.clone();
                let listing = EpochOrders {
                    order: vec![(0..8).collect()],
                    fit_proposed: f64::INFINITY,
                    fit: f64::INFINITY,
                    simulations: 0,
                };
                let chosen = setup.orders_for_rows(&truth, &listing).await.unwrap();
                // Positions simulate their labels, the server's: two of different labels.
                let labels = &setup.scenario.labels;
                let order = &chosen.order[0];
                let (p, q) = (0..4)
                    .flat_map(|p| (4..8).map(move |q| (p, q)))
                    .find(|&(p, q)| labels[p] != labels[q])
                    .expect("positions of both labels");
                let mut rows = truth.clone();
                rows.swap(order[p], order[q]);
                let again = setup.orders_for_rows(&rows, &chosen).await.unwrap();
                let stale = setup
                    .losses_in_orders(encode_rows(setup.dataset, &rows), 1, Some(&chosen.order))
                    .await
                    .unwrap()[0] as f64;
                assert!(stale > 10.0 * chosen.fit, "{stale} against {}", chosen.fit);
                assert!(again.fit <= chosen.fit, "{} against {}", again.fit, chosen.fit);
            })
        })
    }

    #[test]
    fn rows_are_laid_out_epoch_after_epoch_in_each_order() {
        let x = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5];
        let orders = vec![vec![0, 1, 2], vec![2, 0, 1]];
        assert_eq!(
            in_orders(&x, &orders, 2),
            vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 2.0, 2.5, 0.0, 0.5, 1.0, 1.5]
        );
        assert_eq!(
            swapped(&orders, &[(1, 0, 2), (0, 1, 2)]),
            vec![vec![0, 2, 1], vec![1, 0, 2]]
        );
    }
}
