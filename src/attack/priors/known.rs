//! Cells the server already knows. The attribute attack (`attack::attribute`) knows every column of
//! the victim's rows but one: those cells are fixed at their values and only the unknown column is
//! optimised. The relaxed rows become x ⊙ free + fixed (free is 1 on an unknown cell, 0 on a known
//! one; fixed holds the known values, 0 elsewhere), so dL/dx ⊙ free flows back to z, and a known
//! cell's z never moves (sign-Adam moves nothing whose gradient is always 0). Written once here
//! for the CPU kernel; the definition applies the same two products on tensors.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownCells {
    /// One member's rows [rows·d]: 1 where the cell is unknown.
    pub free: Vec<f32>,
    /// One member's rows [rows·d]: the known encoded value, 0 where unknown.
    pub fixed: Vec<f32>,
}

impl KnownCells {
    /// Every cell of `rows` ([n·d], encoded) known except the columns `unknown` (offset, width).
    pub fn all_but(rows: &[f32], d: usize, unknown: &[(usize, usize)]) -> KnownCells {
        let mut free = vec![0f32; rows.len()];
        for row in free.chunks_exact_mut(d) {
            for &(o, w) in unknown {
                row[o..o + w].iter_mut().for_each(|v| *v = 1.0);
            }
        }
        let fixed = rows.iter().zip(&free).map(|(&x, &f)| x * (1.0 - f)).collect();
        KnownCells { free, fixed }
    }

    /// x ← x ⊙ free + fixed on every member's rows (x: [members·rows·d]).
    pub fn apply(&self, x: &mut [f32]) {
        for member in x.chunks_exact_mut(self.free.len()) {
            for ((v, &f), &k) in member.iter_mut().zip(&self.free).zip(&self.fixed) {
                *v = *v * f + k;
            }
        }
    }

    /// dL/dx ← dL/dx ⊙ free on every member's rows.
    pub fn mask(&self, x_bar: &mut [f32]) {
        for member in x_bar.chunks_exact_mut(self.free.len()) {
            member.iter_mut().zip(&self.free).for_each(|(v, &f)| *v *= f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_cells_are_pinned_and_unknown_ones_pass() {
        // Two rows of 4 columns; column block (1, 2) unknown.
        let truth = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let k = KnownCells::all_but(&truth, 4, &[(1, 2)]);
        // Two members' relaxed rows.
        let mut x: Vec<f32> = (0..16).map(|v| -(v as f32)).collect();
        k.apply(&mut x);
        assert_eq!(&x[..8], &[1.0, -1.0, -2.0, 4.0, 5.0, -5.0, -6.0, 8.0]);
        assert_eq!(&x[8..], &[1.0, -9.0, -10.0, 4.0, 5.0, -13.0, -14.0, 8.0]);
        let mut g = vec![1f32; 16];
        k.mask(&mut g);
        assert_eq!(&g[..8], &[0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]);
    }
}
