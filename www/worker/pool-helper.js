// One GEMM helper thread of the shared-memory build (pkg/threads/, src/pool.rs): started by the
// model worker, it instantiates the same module on the worker's memory, says so, and then lends
// this thread to every GEMM (poolHelper() never returns) until the worker terminates it.
self.onmessage = async ({ data: { glue, module, memory } }) => {
  try {
    const m = await import(glue);
    m.initSync({ module, memory });
    self.postMessage({ ready: true });
    m.poolHelper();
  } catch (e) {
    self.postMessage({ error: e.message });
  }
};
