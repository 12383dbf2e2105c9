//! `--layers` and `--heads`: the blocks and heads `attend` and `heads` print. Every head of every
//! layer is printed otherwise: hundreds of MB of JSON for a long text (MiniLM at 512 tokens:
//! 132 MiB), of which one layer's or one head's maps are a small part.

use attnviz::heads::HeadScores;
use attnviz::models::ModelInfo;
use attnviz::output::AttentionResult;
use attnviz::result::AttentionKind;
use std::borrow::Cow;
use std::collections::HashMap;

/// A block as the CLI prints it: borrowed from the forward, or a copy of the heads kept.
pub type Block<'a> = AttentionResult<Cow<'a, [f32]>>;

/// The layers and heads kept (`None`: all of them).
#[derive(Default)]
pub struct Cut {
    pub layers: Option<Vec<usize>>,
    pub heads: Option<Vec<usize>>,
}

/// `0,2,5-7` → `[0, 2, 5, 6, 7]` (ascending, each once).
pub fn parse_list(flag: &str, text: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("{flag} needs numbers from 0 and ranges such as 0,2,5-7, not `{text}`");
    let mut list = Vec::new();
    for item in text.split(',') {
        let (first, last) = item.split_once('-').unwrap_or((item, item));
        let (first, last): (usize, usize) =
            (first.trim().parse().map_err(|_| bad())?, last.trim().parse().map_err(|_| bad())?);
        if first > last {
            return Err(bad());
        }
        // Beyond any model's layers or heads: refused by `check` without listing them all.
        list.extend(first..=last.min(first.saturating_add(1 << 16)));
    }
    list.sort_unstable();
    list.dedup();
    Ok(list)
}

impl Cut {
    /// Each number must name a layer or a head of the model, refused before any work.
    pub fn check(&self, id: &str, info: &ModelInfo) -> Result<(), String> {
        let most = |counts: &HashMap<AttentionKind, usize>| counts.values().copied().max();
        for (flag, list, one, all, count) in [
            ("--layers", &self.layers, "layer", "layers", most(&info.layers)),
            ("--heads", &self.heads, "head", "heads", most(&info.heads)),
        ] {
            let count = count.unwrap_or(0);
            if let Some(n) = list.iter().flatten().find(|&&n| n >= count) {
                return Err(format!(
                    "{flag}: {id} has no {one} {n} (its {all} are 0 to {})",
                    count.saturating_sub(1)
                ));
            }
        }
        Ok(())
    }

    pub fn keeps_layer(&self, layer: usize) -> bool {
        self.layers.as_ref().map_or(true, |l| l.contains(&layer))
    }

    pub fn keeps_head(&self, head: usize) -> bool {
        self.heads.as_ref().map_or(true, |h| h.contains(&head))
    }

    pub fn keeps(&self, s: &HeadScores) -> bool {
        self.keeps_layer(s.layer) && self.keeps_head(s.head)
    }

    /// The blocks of the layers kept, each with the heads kept (`head_ids` names them).
    pub fn blocks<'a>(&self, blocks: Vec<Block<'a>>) -> Vec<Block<'a>> {
        blocks
            .into_iter()
            .filter(|b| self.keeps_layer(b.layer))
            .filter_map(|b| match &self.heads {
                None => Some(b),
                Some(heads) => keep_heads(b, heads),
            })
            .collect()
    }
}

/// `b` with only `heads` (those it has); `None` when it has none of them.
fn keep_heads<'a>(mut b: Block<'a>, heads: &[usize]) -> Option<Block<'a>> {
    let kept: Vec<usize> = heads.iter().copied().filter(|&h| h < b.heads).collect();
    if kept.is_empty() {
        return None;
    }
    let map = b.query_len * b.key_len;
    b.data = b.data.map(|data| {
        Cow::Owned(kept.iter().flat_map(|&h| &data[h * map..(h + 1) * map]).copied().collect())
    });
    b.scores = b.scores.map(|s| s.into_iter().filter(|s| kept.contains(&s.head)).collect());
    b.heads = kept.len();
    b.shape[0] = kept.len();
    b.head_ids = Some(kept);
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::parse_list;

    #[test]
    fn lists_and_ranges_parse() {
        assert_eq!(parse_list("--heads", "3,0-1,1"), Ok(vec![0, 1, 3]));
        assert_eq!(parse_list("--layers", "5"), Ok(vec![5]));
        for bad in ["", "1,", "a", "3-1", "-1", "1-"] {
            assert!(parse_list("--layers", bad).is_err(), "{bad}");
        }
    }
}
