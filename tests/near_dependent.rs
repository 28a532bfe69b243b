//! No batch with a near-dependent pair of rows gets a false proof (issue 43), counted strictly: a
//! proved row more than 0.05 std from every row of the batch in a continuous value, or with
//! another category, is false, and no row may be claimed more often than the batch holds it. A row
//! kept as near a batch row (the certificate's bound at half the scoring tolerance) must be within
//! 0.16 std of one.
//! CI runs a seeded short pass; a long one (the table it prints is the closing note's):
//! `LEAKSCOPE_NEAR_DEPENDENT_BATCHES=20000 LEAKSCOPE_NEAR_DEPENDENT_SEED=0 cargo test --test
//! near_dependent -- --nocapture`.
mod common;
#[path = "common/near_dependent.rs"]
mod generator;

use std::collections::HashMap;

use generator::{Net, Outcome};
use leakscope::client::network::Params;
use leakscope::table::{Dataset, Encoding};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Bands of G₂'s smallest singular value against its largest.
const BANDS: [(f64, &str); 6] = [
    (1e-8, "below 1e-8"),
    (1e-7, "1e-8 to 1e-7"),
    (1e-6, "1e-7 to 1e-6"),
    (1e-5, "1e-6 to 1e-5"),
    (1e-4, "1e-5 to 1e-4"),
    (f64::INFINITY, "above 1e-4"),
];

#[derive(Default)]
struct Tally {
    batches: usize,
    out: Outcome,
    batches_false: usize,
}

/// What `n` batches from seed `first` gave: the table per band, and the first false proof.
struct Run {
    tally: Vec<Tally>,
    first_false: Option<String>,
    skipped: usize,
    /// Rows proved and rows held in the band well above the rounding.
    proved_natural: (usize, usize),
    /// Per crafting of the server's (`generator::CRAFTS`, crafted runs only): batches, rows,
    /// rows proved, false proofs.
    by_craft: Vec<[usize; 4]>,
}

fn run(first: u64, n: usize) -> Run {
    run_on(
        &[common::adult(), common::dataset("german-credit.csv", "credit_risk")],
        first,
        n,
        false,
    )
}

/// `run` on `tables`, batch i on table i mod their number.
/// `crafted`: each network laid out by the server as `generator::CRAFTS` says, in turn.
fn run_on(tables: &[Dataset], first: u64, n: usize, crafted: bool) -> Run {
    let encodings: Vec<Dataset> = tables.iter().map(|d| Encoding::of(d).into_dataset().unwrap()).collect();
    let mut nets: HashMap<String, Params> = HashMap::new();
    let mut out = Run {
        tally: BANDS.iter().map(|_| Tally::default()).collect(),
        first_false: None,
        skipped: 0,
        proved_natural: (0, 0),
        by_craft: vec![[0; 4]; if crafted { generator::CRAFTS.len() } else { 0 }],
    };
    for i in 0..n {
        let seed = first + i as u64;
        let t = i % tables.len();
        let craft = (i / tables.len()) % generator::CRAFTS.len();
        let crafting = crafted.then_some(generator::CRAFTS[craft]);
        let table = (&tables[t], &encodings[t], t);
        let Some((got, net, b)) = one_batch(table, seed, crafting, &mut nets) else {
            out.skipped += 1;
            continue;
        };
        let band = BANDS.iter().position(|(top, _)| got.ratio < *top).unwrap();
        let tl = &mut out.tally[band];
        tl.batches += 1;
        tl.batches_false += (got.false_proofs + got.twice > 0) as usize;
        tl.out.rows += got.rows;
        tl.out.proved += got.proved;
        tl.out.consistent += got.consistent;
        tl.out.false_proofs += got.false_proofs;
        tl.out.twice += got.twice;
        tl.out.near += got.near;
        tl.out.near_false += got.near_false;
        if crafted {
            let c = &mut out.by_craft[craft];
            *c = [
                c[0] + 1,
                c[1] + got.rows,
                c[2] + got.proved,
                c[3] + got.false_proofs + got.twice,
            ];
        }
        if band == BANDS.len() - 1 {
            out.proved_natural = (out.proved_natural.0 + got.proved, out.proved_natural.1 + got.rows);
        }
        if got.false_proofs + got.twice + got.near_false > 0 && out.first_false.is_none() {
            out.first_false = Some(format!("seed {seed}: batch of {b} on {net:?}, ratio {:.1e}", got.ratio));
        }
    }
    out
}

/// The batch of `seed` on `table` (the table, its encoding and its index), on the network the
/// seed draws laid out as `craft` says where given, attacked: what it gave, the network and the
/// batch's size. None where the network is too narrow for the certificate or no batch was built.
/// `nets`: the trained networks so far, by table, width, model and epochs.
fn one_batch(
    (d, encoding, t): (&Dataset, &Dataset, usize),
    seed: u64,
    craft: Option<generator::Craft>,
    nets: &mut HashMap<String, Params>,
) -> Option<(Outcome, Net, usize)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut net: Net = generator::random_net(&mut rng);
    if let Some(craft) = craft {
        net.craft = craft;
    }
    let fitted = d.features.iter().filter(|f| !f.is_categorical()).count();
    // A network too narrow for a batch of 16 and the certificate's checks.
    if net.width < 16 + fitted + 8 {
        return None;
    }
    let key = format!("{t} {} {:?} {}", net.width, net.model, net.epochs);
    let base = nets.entry(key).or_insert_with(|| generator::trained(d, net, 7)).clone();
    // The certificate's room on this network: B + continuous values + 8 spare ≤ width.
    let most = (net.width - fitted - 8).min(40);
    let b = rng.random_range(16.min(most)..=most);
    // The triple that mixes into a fourth row mixes categories.
    let mixed = rng.random_bool(0.3) && d.features.iter().any(|f| f.is_categorical());
    let batch = generator::batch(d, &base, net, b, mixed, &mut rng)?;
    Some((generator::attack(d, encoding, net, &batch), net, b))
}

#[test]
fn no_near_dependent_pair_gets_a_false_proof() {
    let n = common::env_u64("LEAKSCOPE_NEAR_DEPENDENT_BATCHES", 24) as usize;
    let first = common::env_u64("LEAKSCOPE_NEAR_DEPENDENT_SEED", 0);
    let start = std::time::Instant::now();
    check(run(first, n), n, start);
}

/// The same on tables of continuous columns alone: of 40, where the first layer's span holds a
/// batch of fewer rows in part of the space and the certificate reads rows within it
/// (`activation_span::first_layer`), the twins' line in that span too; of 20, where a batch of
/// more rows fills the space and only the rows left once some are peeled off leave directions
/// out (`assess::peeled_search`). `LEAKSCOPE_NEAR_DEPENDENT_CONTINUOUS_BATCHES` for a long run.
#[test]
fn no_near_dependent_pair_on_a_continuous_table_gets_a_false_proof() {
    let n = common::env_u64("LEAKSCOPE_NEAR_DEPENDENT_CONTINUOUS_BATCHES", 12) as usize;
    let first = common::env_u64("LEAKSCOPE_NEAR_DEPENDENT_SEED", 0);
    let start = std::time::Instant::now();
    check(
        run_on(
            &[
                leakscope::table::continuous_table(40, 400, 7),
                leakscope::table::continuous_table(20, 400, 8),
            ],
            first,
            n,
            false,
        ),
        n,
        start,
    );
}

/// The same on networks whose units the server laid out (`generator::Craft`): first-layer units
/// duplicated, binned along one direction, always active, of low rank or reading a column or two
/// each; second-layer units silent or duplicated. `LEAKSCOPE_CRAFTED_BATCHES` for a long run.
#[test]
fn no_network_the_server_crafted_gets_a_false_proof() {
    let n = common::env_u64("LEAKSCOPE_CRAFTED_BATCHES", 14) as usize;
    let first = common::env_u64("LEAKSCOPE_NEAR_DEPENDENT_SEED", 0);
    let start = std::time::Instant::now();
    let out = run_on(
        &[common::adult(), common::dataset("german-credit.csv", "credit_risk")],
        first,
        n,
        true,
    );
    println!("| the server's crafting | batches | rows | proved | false proofs or claimed twice |");
    println!("|---|---|---|---|---|");
    for (craft, c) in generator::CRAFTS.iter().zip(&out.by_craft) {
        println!("| {craft:?} | {} | {} | {} | {} |", c[0], c[1], c[2], c[3]);
    }
    print_table(&out, n, start);
    assert_eq!(out.first_false, None, "a proof of a row not in the batch, first at");
    // Not vacuous: some crafted networks still prove rows. (Not asked where the pair is well
    // separated, as `check` asks: a crafted layout may leave such a batch nothing to prove; one
    // of 140 from seed 100,000 did.)
    assert!(
        out.by_craft.iter().any(|c| c[2] > 0),
        "nothing proved on any crafted network"
    );
}

/// The table of a run, and its assertions.
fn check(out: Run, n: usize, start: std::time::Instant) {
    print_table(&out, n, start);
    assert_eq!(out.first_false, None, "a proof of a row not in the batch, first at");
    // Not vacuous: where the pair is well above the rounding, rows are proved.
    let natural = out.proved_natural;
    assert!(
        natural.1 == 0 || natural.0 > 0,
        "nothing proved on well-separated batches: {natural:?}"
    );
}

/// The table of a run, by band of G₂'s σ_B / σ_1.
fn print_table(out: &Run, n: usize, start: std::time::Instant) {
    println!(
        "| G₂'s σ_B / σ_1 | batches | rows | proved | consistent | of them near | false proofs | claimed twice | batches with a false proof | near, not within 0.16 std |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for ((_, band), t) in BANDS.iter().zip(&out.tally) {
        let o = &t.out;
        println!(
            "| {band} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.batches, o.rows, o.proved, o.consistent, o.near, o.false_proofs, o.twice, t.batches_false, o.near_false
        );
    }
    println!(
        "{} batches ({} without a twin in its cell), {:.0} s",
        n - out.skipped,
        out.skipped,
        start.elapsed().as_secs_f64()
    );
}

/// The two batches in 4,000 that the second layer's proof got wrong before it checked the cells
/// next to a row's (`activation_span::proof`, "edge_cells"): a point on a twin pair's line just
/// past the pair's cell, proved (seed 929: duration 34, amount 4011 beside the pair's (36, 3929)
/// and (37, 3886)). Each is reached from the even seed below it, as the table alternates.
#[test]
fn a_point_past_a_twin_pairs_cell_is_not_proved() {
    for first in [928, 10708] {
        let out = run(first, 2);
        assert_eq!(out.first_false, None, "a proof of a row not in the batch");
        let proved: usize = out.tally.iter().map(|t| t.out.proved).sum();
        assert!(proved >= 40, "seeds {first}, {}: only {proved} rows proved", first + 1);
    }
}

/// The near row that the polish moved (seed 100,124 of the crafted long run from seed 100,000:
/// Adult, B = 28, a [100, 100] ReLU softmax network whose second-layer units the server copied):
/// the certificate placed a batch row within half the scoring tolerance of it, the polish then
/// moved it 0.23 std from every batch row, and it kept the claim. A moved near row now keeps it
/// only where the certificate holds at its new point (`assess::near_moved`); here none does.
#[test]
fn a_near_row_keeps_its_bound() {
    let d = common::adult();
    let encoding = Encoding::of(&d).into_dataset().unwrap();
    let craft = Some(generator::Craft::DuplicateSecond);
    let (got, ..) = one_batch((&d, &encoding, 0), 100_124, craft, &mut HashMap::new()).unwrap();
    assert_eq!(got.near_false, 0, "a near row past half the scoring tolerance");
    assert_eq!(got.false_proofs + got.twice, 0, "a proof of a row not in the batch");
    // The claim goes, not the rows: the polished rows stay consistent with the update.
    assert!(got.consistent >= 20, "{} rows consistent", got.consistent);
}
