package io.hybrid.lucene;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs one task per query on a fixed number of threads; results land in a caller-owned array slot per query, so
 * the output order never depends on scheduling.
 */
final class Parallel {
  private Parallel() {}

  interface Task {
    void run(int query) throws Exception;
  }

  static void forEach(int n, int threads, Task task) {
    if (threads <= 1 || n <= 1) {
      for (int q = 0; q < n; q++) {
        call(task, q);
      }
      return;
    }
    int workers = Math.min(threads, n);
    ExecutorService pool = Executors.newFixedThreadPool(workers, r -> {
      Thread t = new Thread(r, "hybrid-lucene");
      t.setDaemon(true);
      return t;
    });
    AtomicInteger next = new AtomicInteger();
    List<Future<?>> futures = new ArrayList<>(workers);
    try {
      for (int w = 0; w < workers; w++) {
        futures.add(pool.submit(() -> {
          for (int q = next.getAndIncrement(); q < n; q = next.getAndIncrement()) {
            call(task, q);
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(cause);
    } finally {
      pool.shutdownNow();
    }
  }

  private static void call(Task task, int q) {
    try {
      task.run(q);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("query " + q + ": " + e, e);
    }
  }
}
