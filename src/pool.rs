//! A fixed pool of helper threads for the GEMM, in the wasm build made with shared memory
//! (`+atomics`): each helper is a Web Worker that instantiated the same module on the same
//! memory and then called [`helper_loop`], which never returns. Elsewhere (the native CLI, the
//! one-thread wasm builds, a page that is not cross-origin isolated) there are no helpers and
//! [`for_each_chunk`] runs every chunk on the calling thread.
//!
//! A job is a `Fn(chunk)` plus a chunk count; every thread, the caller included, takes chunk
//! indices from one atomic counter until none are left, so a core that another process keeps
//! busy simply takes fewer chunks. Helpers spin briefly between jobs (a forward issues dozens of
//! GEMMs back to back) and then sleep in `memory.atomic.wait32`.

/// Run `f(c)` for every chunk `c` in `0..chunks`, on the pool's threads and this one; returns
/// when all have run.
pub fn for_each_chunk(chunks: usize, f: &(dyn Fn(usize) + Sync)) {
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    if chunks > 1 && shared::run(chunks, f) {
        return;
    }
    (0..chunks).for_each(f);
}

/// How many threads take part in a job: 1 + the helpers that joined.
pub fn threads() -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    return 1 + shared::helpers();
    #[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
    1
}

#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
pub use shared::helper_loop;

#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
mod shared {
    use core::arch::wasm32::{memory_atomic_notify, memory_atomic_wait32};
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering::*};

    struct Job<'a> {
        f: &'a (dyn Fn(usize) + Sync),
        chunks: usize,
        next: AtomicUsize,
    }

    /// Helpers that entered [`helper_loop`].
    static HELPERS: AtomicUsize = AtomicUsize::new(0);
    /// Bumped once per job; helpers wait on it.
    static GENERATION: AtomicI32 = AtomicI32::new(0);
    /// Helpers still working on the current job; the caller waits on it.
    static PENDING: AtomicI32 = AtomicI32::new(0);
    static JOB: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
    /// A job is running (a GEMM inside a chunk, or two callers, run on their own thread alone).
    static BUSY: AtomicBool = AtomicBool::new(false);
    /// Spins (an atomic load each, a few ms in all) before a helper sleeps: longer than the gap between two
    /// GEMMs of one forward, far shorter than the gap between keystrokes.
    const SPINS: u32 = 1_000_000;

    pub fn helpers() -> usize {
        HELPERS.load(Acquire)
    }

    fn take_chunks(job: &Job) {
        loop {
            let c = job.next.fetch_add(1, Relaxed);
            if c >= job.chunks {
                return;
            }
            (job.f)(c);
        }
    }

    pub fn run(chunks: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
        let helpers = HELPERS.load(Acquire);
        if helpers == 0 || BUSY.swap(true, Acquire) {
            return false;
        }
        let job = Job { f, chunks, next: AtomicUsize::new(0) };
        // Every helper counted here acknowledges this generation exactly once (a helper joins
        // only between jobs, under BUSY, see helper_loop).
        PENDING.store(helpers as i32, Relaxed);
        JOB.store(&job as *const Job as *mut (), Release);
        GENERATION.fetch_add(1, Release);
        // SAFETY: the address is a live static i32.
        unsafe { memory_atomic_notify(GENERATION.as_ptr() as *mut i32, u32::MAX) };
        take_chunks(&job);
        // `job` lives on this stack: wait until no helper can still read it.
        let mut spins = 0;
        loop {
            let left = PENDING.load(Acquire);
            if left == 0 {
                break;
            }
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                // SAFETY: a live static i32; waiting is allowed in a worker (the only caller).
                unsafe { memory_atomic_wait32(PENDING.as_ptr(), left, 1_000_000) };
            }
        }
        JOB.store(std::ptr::null_mut(), Relaxed);
        BUSY.store(false, Release);
        true
    }

    /// A helper thread's body: take part in every job from now on. Never returns.
    pub fn helper_loop() -> ! {
        // Join between jobs only, so that PENDING counts exactly the helpers that saw the job.
        while BUSY.swap(true, Acquire) {
            std::hint::spin_loop();
        }
        let mut seen = GENERATION.load(Acquire);
        HELPERS.fetch_add(1, Release);
        BUSY.store(false, Release);
        loop {
            let mut spins = 0;
            while GENERATION.load(Acquire) == seen {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    // SAFETY: a live static i32; helpers run in workers, where waiting is allowed.
                    unsafe { memory_atomic_wait32(GENERATION.as_ptr(), seen, -1) };
                }
            }
            seen = GENERATION.load(Acquire);
            // SAFETY: the caller set JOB before bumping GENERATION and keeps it alive until
            // PENDING reaches 0, which this helper's decrement below is part of.
            let job = unsafe { &*(JOB.load(Acquire) as *const Job) };
            take_chunks(job);
            if PENDING.fetch_sub(1, AcqRel) == 1 {
                // SAFETY: a live static i32.
                unsafe { memory_atomic_notify(PENDING.as_ptr() as *mut i32, 1) };
            }
        }
    }
}
