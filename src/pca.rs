//! The query/key space of one head (the qk view): the head's query vectors q_i and key
//! vectors k_j pooled, centred, and projected on their first two principal components, the
//! eigenvectors of the d_k × d_k covariance with the largest eigenvalues (nalgebra's
//! symmetric eigendecomposition, in f64).

use nalgebra::{DMatrix, SymmetricEigen};
use serde::Serialize;

/// Queries and keys of one head on their two principal components.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QkProjection {
    /// `# [query_len, 2]` each query's coordinates on PC1, PC2.
    pub q: Vec<f32>,
    /// `# [key_len, 2]` each key's coordinates.
    pub k: Vec<f32>,
    /// The share of the pooled vectors' variance along PC1 and PC2.
    pub explained: [f64; 2],
    /// `# [2, d_k]` PC1 and PC2 (unit vectors; each signed to point along (1, 1, …, 1) or
    /// more, as a power iteration from a positive start finds it).
    pub axes: Vec<f32>,
}

/// The PCA of one head's queries `q` `# [Tq, d_k]` and keys `k` `# [Tk, d_k]`, pooled.
pub fn qk_projection(q: &[f32], k: &[f32], d_k: usize) -> QkProjection {
    let d = d_k;
    let rows: Vec<&[f32]> = q.chunks_exact(d.max(1)).chain(k.chunks_exact(d.max(1))).collect();
    let query_len = q.len() / d.max(1);
    let (axes, explained) = principal_axes(&rows, d, 2);
    let project = |r: &&[f32], mean: &[f64]| -> [f32; 2] {
        std::array::from_fn(|a| {
            axes.get(a).map_or(0.0, |v| {
                r.iter().zip(mean).zip(v).map(|((x, m), v)| (*x as f64 - m) * v).sum::<f64>() as f32
            })
        })
    };
    let mean = mean(&rows, d);
    let coords: Vec<[f32; 2]> = rows.iter().map(|r| project(r, &mean)).collect();
    let (q, k) = coords.split_at(query_len.min(coords.len()));
    QkProjection {
        q: q.iter().flatten().copied().collect(),
        k: k.iter().flatten().copied().collect(),
        explained: [0, 1].map(|a| explained.get(a).copied().unwrap_or(0.0)),
        axes: (0..2)
            .flat_map(|a| {
                axes.get(a).map_or_else(|| vec![0.0; d], |v| v.iter().map(|&x| x as f32).collect())
            })
            .collect(),
    }
}

fn mean(rows: &[&[f32]], d: usize) -> Vec<f64> {
    let n = rows.len().max(1) as f64;
    (0..d).map(|j| rows.iter().map(|r| r[j] as f64).sum::<f64>() / n).collect()
}

/// The `count` leading eigenvectors of the covariance of `rows` (each `d` values) and the share
/// of the total variance along each, largest first; fewer when `d` is smaller.
fn principal_axes(rows: &[&[f32]], d: usize, count: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let n = rows.len();
    if n == 0 || d == 0 {
        return (Vec::new(), Vec::new());
    }
    let mean = mean(rows, d);
    // Centred rows as the columns of X (d × n); covariance C = X Xᵀ / n.
    let x = DMatrix::from_fn(d, n, |j, i| rows[i][j] as f64 - mean[j]);
    let c = (&x * x.transpose()) / n as f64;
    let total = c.trace();
    let eigen = SymmetricEigen::new(c);
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));
    let start: Vec<f64> = (0..d).map(|i| 1.0 + i as f64 / d as f64).collect();
    order
        .into_iter()
        .take(count)
        .map(|i| {
            let v: Vec<f64> = eigen.eigenvectors.column(i).iter().copied().collect();
            let sign = if v.iter().zip(&start).map(|(a, b)| a * b).sum::<f64>() < 0.0 {
                -1.0
            } else {
                1.0
            };
            let share = if total > 0.0 { eigen.eigenvalues[i].max(0.0) / total } else { 0.0 };
            (v.into_iter().map(|x| sign * x).collect(), share)
        })
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pca(q: Vec<f32>, k: Vec<f32>, d_k: usize) -> QkProjection {
        qk_projection(&q, &k, d_k)
    }

    #[test]
    fn a_known_decomposition() {
        // Points on the axes of a 3-d space: ±3 along e2, ±2 along e0, ±1 along e1, so the
        // covariance is diag(8/6, 2/6, 18/6) (mean 0): PC1 = e2 (9/14 of the variance),
        // PC2 = e0 (4/14), and each point lands on its own coordinates.
        let q = vec![0.0, 0.0, 3.0, 0.0, 0.0, -3.0, 2.0, 0.0, 0.0];
        let k = vec![-2.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, -1.0, 0.0];
        let p = pca(q, k, 3);
        assert_eq!((p.q.len(), p.k.len(), p.axes.len()), (6, 6, 6));
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
        assert!(close(&p.axes, &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0]), "{:?}", p.axes);
        assert!(
            (p.explained[0] - 9.0 / 14.0).abs() < 1e-12
                && (p.explained[1] - 4.0 / 14.0).abs() < 1e-12,
            "{:?}",
            p.explained
        );
        assert!(close(&p.q, &[3.0, 0.0, -3.0, 0.0, 0.0, 2.0]), "{:?}", p.q);
        assert!(close(&p.k, &[0.0, -2.0, 0.0, 0.0, 0.0, 0.0]), "{:?}", p.k);
    }

    #[test]
    fn a_rotated_plane_and_its_signs() {
        // Points spread along u = (1, 1)/√2 (±2) and v = (1, −1)/√2 (±1), with a mean of (5, 5):
        // PC1 = u, PC2 = ±v signed towards (1, 1.5), so v's sign is (−1, 1)/√2.
        let s = std::f32::consts::FRAC_1_SQRT_2;
        let pts = |a: f32, b: f32| [5.0 + (a + b) * s, 5.0 + (a - b) * s];
        let q: Vec<f32> = [pts(2.0, 0.0), pts(-2.0, 0.0)].concat();
        let k: Vec<f32> = [pts(0.0, 1.0), pts(0.0, -1.0)].concat();
        let p = pca(q, k, 2);
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5);
        assert!(close(&p.axes, &[s, s, -s, s]), "{:?}", p.axes);
        assert!(
            close(&p.q, &[2.0, 0.0, -2.0, 0.0]) && close(&p.k, &[0.0, -1.0, 0.0, 1.0]),
            "{:?} {:?}",
            p.q,
            p.k
        );
        assert!((p.explained[0] - 0.8).abs() < 1e-6 && (p.explained[1] - 0.2).abs() < 1e-6);
        // One dimension: PC2 does not exist.
        let one = pca(vec![1.0, 2.0], vec![3.0], 1);
        assert_eq!(
            (one.q, one.k, one.explained, one.axes),
            (vec![-1.0, 0.0, 0.0, 0.0], vec![1.0, 0.0], [1.0, 0.0], vec![1.0, 0.0])
        );
    }
}
