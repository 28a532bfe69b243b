//! The update a client sends, layer by layer: the change to each layer's weight W ([in, out]
//! row-major, as `Params` holds it) and to its bias b ([out]). FedSGD sends the gradient, FedAvg
//! θ0 − θE. Code reaches a tensor by its layer and role; only the kernels, which lay the update out
//! as one list (every W, then every b), ask for that order, through `tensors`.
/// Which of a layer's two tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Weight,
    Bias,
}

/// One layer's part of an update.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerUpdate {
    /// The layer's name in the client's model (a received `state_dict`'s prefix: `0`, `fc1`, …);
    /// `layers.<l>` for a simulated client.
    pub name: String,
    /// W's update, [in, out] row-major.
    pub weight: Vec<f32>,
    /// b's update, [out].
    pub bias: Vec<f32>,
}

/// A whole update, from the first layer to the last.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub layers: Vec<LayerUpdate>,
}

impl Update {
    /// A simulated client's update from its layers' W and b updates, in layer order.
    pub fn from_layers(weights: Vec<Vec<f32>>, biases: Vec<Vec<f32>>) -> Update {
        let names = (0..weights.len()).map(|l| format!("layers.{l}")).collect();
        Update::named(names, weights, biases)
    }

    /// An update whose layers have these names.
    pub fn named(names: Vec<String>, weights: Vec<Vec<f32>>, biases: Vec<Vec<f32>>) -> Update {
        assert!(
            names.len() == weights.len() && weights.len() == biases.len(),
            "a layer has a name, a weight and a bias"
        );
        let layers = names
            .into_iter()
            .zip(weights.into_iter().zip(biases))
            .map(|(name, (weight, bias))| LayerUpdate { name, weight, bias })
            .collect();
        Update { layers }
    }

    pub fn layers(&self) -> usize {
        self.layers.len()
    }

    /// Layer l's W update, [in, out] row-major.
    pub fn weight(&self, l: usize) -> &[f32] {
        &self.layers[l].weight
    }

    /// Layer l's b update.
    pub fn bias(&self, l: usize) -> &[f32] {
        &self.layers[l].bias
    }

    pub fn tensor(&self, l: usize, role: Role) -> &[f32] {
        match role {
            Role::Weight => self.weight(l),
            Role::Bias => self.bias(l),
        }
    }

    /// The layers' names, first to last.
    pub fn names(&self) -> Vec<&str> {
        self.layers.iter().map(|l| l.name.as_str()).collect()
    }

    /// Every tensor with its place, in the kernels' order: each layer's W, then each layer's b.
    pub fn tensors(&self) -> impl Iterator<Item = (usize, Role, &[f32])> {
        let weights = self
            .layers
            .iter()
            .enumerate()
            .map(|(l, t)| (l, Role::Weight, t.weight.as_slice()));
        let biases = self
            .layers
            .iter()
            .enumerate()
            .map(|(l, t)| (l, Role::Bias, t.bias.as_slice()));
        weights.chain(biases)
    }

    /// Every value, in the order of `tensors`.
    pub fn values(&self) -> impl Iterator<Item = f32> + '_ {
        self.tensors().flat_map(|(_, _, t)| t.iter().copied())
    }

    /// Every value, mutably, in the order of `tensors` (defences draw their noise in that order).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut f32> + '_ {
        let (weights, biases): (Vec<_>, Vec<_>) = self
            .layers
            .iter_mut()
            .map(|t| (t.weight.iter_mut(), t.bias.iter_mut()))
            .unzip();
        weights.into_iter().flatten().chain(biases.into_iter().flatten())
    }

    /// ‖self − other‖ / ‖other‖ in float64 (0 where both are zero, ∞ where only `other` is).
    pub fn relative_gap(&self, other: &Update) -> f64 {
        let (mut diff, mut norm) = (0f64, 0f64);
        for (a, b) in self.values().zip(other.values()) {
            diff += (a as f64 - b as f64).powi(2);
            norm += (b as f64).powi(2);
        }
        match norm > 0.0 {
            true => (diff / norm).sqrt(),
            false if diff == 0.0 => 0.0,
            false => f64::INFINITY,
        }
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.layers.iter().map(|t| t.weight.len() + t.bias.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// L2 norm of the whole update as one vector, accumulated in f64.
    pub fn norm(&self) -> f64 {
        self.values().map(|v| (v as f64) * (v as f64)).sum::<f64>().sqrt()
    }

    /// ⟨self, other⟩ over every value (the same network's), in f64.
    pub fn dot(&self, other: &Update) -> f64 {
        self.values()
            .zip(other.values())
            .map(|(a, b)| a as f64 * b as f64)
            .sum()
    }

    pub fn is_finite(&self) -> bool {
        self.values().all(f32::is_finite)
    }

    /// Adds `other` (the same network's) value by value: the server's sum over clients.
    pub fn add(&mut self, other: &Update) {
        for (a, b) in self.layers.iter_mut().zip(&other.layers) {
            a.weight.iter_mut().zip(&b.weight).for_each(|(a, b)| *a += b);
            a.bias.iter_mut().zip(&b.bias).for_each(|(a, b)| *a += b);
        }
    }

    pub fn scale(&mut self, k: f32) {
        self.values_mut().for_each(|v| *v *= k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_layers() -> Update {
        Update::from_layers(vec![vec![1.0, 2.0], vec![3.0]], vec![vec![4.0], vec![5.0]])
    }

    #[test]
    fn tensors_come_in_the_kernels_order() {
        let u = two_layers();
        let order: Vec<(usize, Role)> = u.tensors().map(|(l, r, _)| (l, r)).collect();
        assert_eq!(
            order,
            [(0, Role::Weight), (1, Role::Weight), (0, Role::Bias), (1, Role::Bias)]
        );
        assert_eq!(u.values().collect::<Vec<_>>(), [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(u.names(), ["layers.0", "layers.1"]);
        assert_eq!(u.tensor(1, Role::Bias), [5.0]);
    }

    #[test]
    fn values_mut_visits_the_same_order() {
        let mut u = two_layers();
        for (k, v) in u.values_mut().enumerate() {
            *v = k as f32;
        }
        assert_eq!(u.weight(0), [0.0, 1.0]);
        assert_eq!(u.weight(1), [2.0]);
        assert_eq!(u.bias(0), [3.0]);
        assert_eq!(u.bias(1), [4.0]);
    }

    #[test]
    fn sums_scales_and_measures() {
        let mut u = two_layers();
        u.add(&two_layers());
        u.scale(0.5);
        assert_eq!(u, two_layers());
        assert_eq!(u.len(), 5);
        assert!((u.norm() - 55f64.sqrt()).abs() < 1e-12);
        u.layers[1].bias[0] = f32::NAN;
        assert!(!u.is_finite());
    }
}
