//! Why a head attends: each pre-softmax score q_i·k_j/√d_k of the traced head split into parts
//! that sum to it exactly (the "Score parts" view draws them as stacked bars).
//!
//! - `embedding` — the first layer of a model whose input is token + position (BERT, Marian):
//!   the layer's input is split into its token part, its position part and the rest (segment
//!   embedding, LayerNorm bias), each projected by W_Q and W_K; the projection biases join the
//!   rest ("bias"). BERT's LayerNorm of the sum is linear in the sum once the row's own mean and
//!   deviation are fixed, so the parts are exact: the score is the nine products q_a·k_b.
//! - `bias` — every later layer with projection biases: q = x·W_Qᵀ + b_Q and k = x·W_Kᵀ + b_K,
//!   four products. Deeper layers have mixed token and position, so only this split is exact
//!   there.
//! - `rotary` — Llama: RoPE rotates dimension pairs, so the score is a sum over the pairs, one
//!   term per frequency θ_i (fast pairs see relative position, slow ones mostly content).

use super::layers::Linear;
use crate::tensor::{matmul_bt, Mat, View};

/// What a family offers the probe for its traced head, and what the trace keeps of it.
#[derive(Clone, Debug, PartialEq)]
pub enum QkSplit {
    /// q = Σ_a q_a and k = Σ_b k_b over named parts: `q[a]` `# [Tq, d_k]`, `k[b]` `# [Tk', d_k]`
    /// for the keys `k_first .. k_first + Tk'`.
    Sums { names: Vec<&'static str>, q: Vec<Vec<f32>>, k: Vec<Vec<f32>>, k_first: usize },
    /// The head's slices of the projection biases `# [d_k]` each: q − b_Q is the input's part.
    Bias { q_bias: Vec<f32>, k_bias: Vec<f32> },
    /// Dimension pairs `(a, b)` rotated together by θ_i radians per position.
    Rotary { pairs: Vec<(usize, usize)>, frequencies: Vec<f64> },
}

impl QkSplit {
    /// Adds a later call's split (its query rows; its keys past those known). None when the two
    /// cannot be joined (a different split, or keys left out between them).
    pub(crate) fn append(self, later: QkSplit, d_k: usize) -> Option<QkSplit> {
        match (self, later) {
            (
                QkSplit::Sums { names, mut q, mut k, k_first },
                QkSplit::Sums { names: n2, q: q2, k: k2, k_first: f2 },
            ) if names == n2 && k_first == 0 => {
                let known = k.first().map_or(0, |rows| rows.len() / d_k.max(1));
                if f2 > known {
                    return None;
                }
                let skip = (known - f2) * d_k;
                for (rows, more) in q.iter_mut().zip(q2) {
                    rows.extend(more);
                }
                for (rows, more) in k.iter_mut().zip(k2) {
                    rows.extend(more.get(skip..).unwrap_or(&[]));
                }
                Some(QkSplit::Sums { names, q, k, k_first })
            }
            (s @ (QkSplit::Bias { .. } | QkSplit::Rotary { .. }), l) if s == l => Some(s),
            _ => None,
        }
    }

    /// Keeps query rows `0..q` and keys `0..k` (a causal prefix).
    pub(crate) fn keep_first(&mut self, q_rows: usize, k_rows: usize, d_k: usize) {
        if let QkSplit::Sums { q, k, .. } = self {
            q.iter_mut().for_each(|rows| rows.truncate(q_rows * d_k));
            k.iter_mut().for_each(|rows| rows.truncate(k_rows * d_k));
        }
    }
}

/// The traced head's scores split into parts (see the module's documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct ScoreParts {
    /// `embedding`, `bias` or `rotary`.
    pub basis: &'static str,
    /// One per part: `token·position` (the query's part · the key's part), or `pair 3`.
    pub names: Vec<String>,
    /// `# [parts, Tq, Tk]` the parts of the scaled scores q_i·k_j/√d_k (before the mask):
    /// summed over the parts, the trace's `scaled`.
    pub values: Vec<f32>,
    /// `rotary`: each pair's θ_i in radians per position; empty otherwise.
    pub frequencies: Vec<f64>,
}

/// The parts of the scaled scores of a head whose queries `q` `# [Tq, d_k]` and keys `k`
/// `# [Tk, d_k]` split as `split` says; None when the split does not cover every row.
pub fn score_parts(
    split: &QkSplit,
    q: &[f32],
    k: &[f32],
    d_k: usize,
    tq: usize,
    tk: usize,
) -> Option<ScoreParts> {
    if d_k == 0 || q.len() != tq * d_k || k.len() != tk * d_k {
        return None;
    }
    let scale = 1.0 / (d_k as f32).sqrt();
    // # [Tq, Tk] = a · bᵀ / √d_k
    let product = |a: &[f32], b: &[f32]| {
        let mut out = vec![0.0f32; tq * tk];
        let view = |data, rows| View { data, offset: 0, rows, cols: d_k, stride: d_k };
        matmul_bt(view(a, tq), view(b, tk), &mut out, 0, tk);
        out.iter_mut().for_each(|s| *s *= scale);
        out
    };
    let (basis, names, values, frequencies) = match split {
        QkSplit::Sums { names, q: qs, k: ks, k_first: 0 } => {
            let complete = |parts: &[Vec<f32>], rows| {
                parts.len() == names.len() && parts.iter().all(|p| p.len() == rows * d_k)
            };
            if !complete(qs, tq) || !complete(ks, tk) {
                return None;
            }
            let mut labels = Vec::new();
            let mut values = Vec::with_capacity(names.len().pow(2) * tq * tk);
            for (a, qa) in names.iter().zip(qs) {
                for (b, kb) in names.iter().zip(ks) {
                    labels.push(format!("{a}·{b}"));
                    values.extend(product(qa, kb));
                }
            }
            ("embedding", labels, values, Vec::new())
        }
        QkSplit::Bias { q_bias, k_bias } => {
            if q_bias.len() != d_k || k_bias.len() != d_k {
                return None;
            }
            let minus = |rows: &[f32], bias: &[f32]| -> Vec<f32> {
                rows.chunks_exact(d_k)
                    .flat_map(|r| r.iter().zip(bias).map(|(x, b)| x - b))
                    .collect()
            };
            let (q_in, k_in) = (minus(q, q_bias), minus(k, k_bias));
            let (q_b, k_b) = (q_bias.repeat(tq), k_bias.repeat(tk));
            let mut values = product(&q_in, &k_in);
            values.extend(product(&q_in, &k_b));
            values.extend(product(&q_b, &k_in));
            values.extend(product(&q_b, &k_b));
            let names = ["input·input", "input·bias", "bias·input", "bias·bias"];
            ("bias", names.map(String::from).to_vec(), values, Vec::new())
        }
        QkSplit::Rotary { pairs, frequencies } => {
            if pairs.iter().any(|&(a, b)| a >= d_k || b >= d_k) {
                return None;
            }
            let mut values = Vec::with_capacity(pairs.len() * tq * tk);
            for &(a, b) in pairs {
                for i in 0..tq {
                    let (qa, qb) = (q[i * d_k + a], q[i * d_k + b]);
                    values.extend(
                        (0..tk).map(|j| (qa * k[j * d_k + a] + qb * k[j * d_k + b]) * scale),
                    );
                }
            }
            let names = (0..pairs.len()).map(|i| format!("pair {i}")).collect();
            ("rotary", names, values, frequencies.clone())
        }
        QkSplit::Sums { .. } => return None,
    };
    Some(ScoreParts { basis, names, values, frequencies })
}

/// Rows `# [T, width]` → the traced head's columns `h·d_k ..` `# [T, d_k]`.
fn head_columns(m: &Mat, first: usize, d_k: usize) -> Vec<f32> {
    m.cols_range(first, d_k).into_vec()
}

/// A layer input split into named parts that sum to it `# [T, d]` each; the last part takes the
/// projection biases (it is called "bias"). `first_key` is the position of its first row among
/// the attention's keys (a decode step's row joins the keys before it).
#[derive(Clone)]
pub struct InputSplit {
    pub names: Vec<&'static str>,
    pub parts: Vec<Mat>,
    pub first_key: usize,
}

impl InputSplit {
    /// The head's queries and keys of a self-attention over these rows, split likewise:
    /// q_a = part_a · W_Qᵀ (+ b_Q for the last part), k_b the same with W_K; query head `h`
    /// reads key/value head `g`.
    pub fn project(&self, wq: &Linear, wk: &Linear, (h, g): (usize, usize), d_k: usize) -> QkSplit {
        let last = self.parts.len().saturating_sub(1);
        let side = |w: &Linear, head: usize| -> Vec<Vec<f32>> {
            self.parts
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    let bias = if i == last { w.bias.as_deref() } else { None };
                    head_columns(&w.weight.linear(part, bias), head * d_k, d_k)
                })
                .collect()
        };
        QkSplit::Sums {
            names: self.names.clone(),
            q: side(wq, h),
            k: side(wk, g),
            k_first: self.first_key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum_parts(p: &ScoreParts, n: usize) -> Vec<f32> {
        let mut total = vec![0.0; n];
        for part in p.values.chunks_exact(n) {
            total.iter_mut().zip(part).for_each(|(t, v)| *t += v);
        }
        total
    }

    fn scaled(q: &[f32], k: &[f32], d_k: usize) -> Vec<f32> {
        let s = 1.0 / (d_k as f32).sqrt();
        q.chunks_exact(d_k)
            .flat_map(|qi| {
                k.chunks_exact(d_k)
                    .map(move |kj| s * qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>())
            })
            .collect()
    }

    #[test]
    fn bias_and_rotary_parts_sum_to_the_score() {
        let d_k = 4;
        let q: Vec<f32> = (0..8).map(|i| (i as f32 * 0.37).sin()).collect(); // [2, 4]
        let k: Vec<f32> = (0..12).map(|i| (i as f32 * 0.53).cos()).collect(); // [3, 4]
        let want = scaled(&q, &k, d_k);
        let splits = [
            QkSplit::Bias { q_bias: vec![0.1, -0.2, 0.3, 0.0], k_bias: vec![0.5, 0.5, -1.0, 2.0] },
            QkSplit::Rotary { pairs: vec![(0, 2), (1, 3)], frequencies: vec![1.0, 0.01] },
        ];
        for split in &splits {
            let p = score_parts(split, &q, &k, d_k, 2, 3).unwrap();
            assert_eq!(p.values.len(), p.names.len() * 6);
            for (a, b) in sum_parts(&p, 6).iter().zip(&want) {
                assert!((a - b).abs() < 1e-6, "{split:?}: {a} vs {b}");
            }
        }
        // Rows that do not match the shape give no parts, never a panic.
        assert_eq!(score_parts(&splits[0], &q, &k, d_k, 3, 3), None);
        let bad = QkSplit::Rotary { pairs: vec![(0, 9)], frequencies: vec![1.0] };
        assert_eq!(score_parts(&bad, &q, &k, d_k, 2, 3), None);
    }

    #[test]
    fn sums_join_a_decode_steps_keys_after_the_known_ones() {
        let row = |v: f32| vec![v; 2];
        let step = |t: usize| QkSplit::Sums {
            names: vec!["token", "bias"],
            q: vec![row(t as f32), row(1.0)],
            k: vec![row(t as f32), row(1.0)],
            k_first: t,
        };
        let joined = step(0).append(step(1), 2).and_then(|s| s.append(step(2), 2)).unwrap();
        let QkSplit::Sums { q, k, .. } = &joined else { panic!() };
        assert_eq!((q[0].len(), k[0].len()), (6, 6));
        assert_eq!(k[0], vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
        // A gap in the keys cannot be decomposed.
        assert_eq!(step(0).append(step(2), 2), None);
    }
}
