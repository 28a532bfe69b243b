// The tasks running on one table, so that `table.cancel()` stops them all. Each task gets a signal
// that aborts when the caller's own signal does or when the table is cancelled.
export class Tasks {
  #running = new Set();
  #promises = new Set();

  /** Run `task(signal)`; the caller's `signal` and `cancel()` both abort it. */
  async run(signal, task) {
    signal?.throwIfAborted();
    const controller = new AbortController();
    const follow = () => controller.abort(signal.reason);
    signal?.addEventListener('abort', follow, { once: true });
    this.#running.add(controller);
    const promise = task(controller.signal);
    this.#promises.add(promise);
    try {
      return await promise;
    } finally {
      this.#running.delete(controller);
      this.#promises.delete(promise);
      signal?.removeEventListener('abort', follow);
    }
  }

  /** Resolves once every task running now has ended, however it ended. */
  settled() {
    return Promise.allSettled([...this.#promises]);
  }

  /** Abort every running task with an AbortError. */
  cancel(message = 'cancelled: table.cancel() was called') {
    for (const controller of this.#running) controller.abort(new DOMException(message, 'AbortError'));
  }
}
