//! Progress of a long forward, for a caller that shows it while it waits (the page's "layer 5
//! of 30" on a pasted page of text): the one attention layer reports every call it finishes to
//! the hook set around a forward. A hook only observes; it cannot change or stop the forward.

use super::probe::Site;
use std::cell::RefCell;

/// What a hook is told: the attention call at `site` is done, having computed `query_rows` rows.
pub type Hook = Box<dyn FnMut(Site, usize)>;

thread_local! {
    static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Runs `forward` with `hook` told of every attention call it finishes; the hook is removed
/// afterwards, whatever `forward` returned.
pub fn reporting<R>(hook: Hook, forward: impl FnOnce() -> R) -> R {
    struct Unset;
    impl Drop for Unset {
        fn drop(&mut self) {
            HOOK.with(|h| h.borrow_mut().take());
        }
    }
    HOOK.with(|h| *h.borrow_mut() = Some(hook));
    let _unset = Unset;
    forward()
}

/// Called by the attention layer after each call (a no-op without a hook).
pub(super) fn attention_done(site: Site, query_rows: usize) {
    HOOK.with(|h| {
        // A hook that reported into a forward of its own would find the cell borrowed: skipped.
        if let Ok(mut hook) = h.try_borrow_mut() {
            if let Some(hook) = hook.as_mut() {
                hook(site, query_rows);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::AttentionKind;
    use std::rc::Rc;

    #[test]
    fn a_hook_hears_each_call_and_only_during_its_forward() {
        let heard = Rc::new(RefCell::new(Vec::new()));
        let site = |layer| Site { kind: AttentionKind::EncoderSelf, layer };
        attention_done(site(9), 1); // no hook: nothing
        let h = heard.clone();
        let out = reporting(Box::new(move |s, rows| h.borrow_mut().push((s.layer, rows))), || {
            attention_done(site(0), 4);
            attention_done(site(1), 4);
            7
        });
        attention_done(site(2), 4); // after the forward: nothing
        assert_eq!(out, 7);
        assert_eq!(*heard.borrow(), vec![(0, 4), (1, 4)]);
    }
}
