package io.hybrid.lucene;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.Collector;
import org.apache.lucene.search.LeafCollector;
import org.apache.lucene.search.Scorable;
import org.apache.lucene.search.ScoreMode;

/**
 * Top-k passages by their best mention's score, collected in one pass ("best mention wins").
 *
 * <p>Collecting mention hits and collapsing afterwards needs an over-fetch guess (and a retry when too many hits
 * share a passage). Collapsing while collecting is exact: a min-heap holds the current top-k passages with their
 * best mention; once it is full, its worst score is handed to the scorer as the minimum competitive score, so
 * Lucene's block-max WAND / MaxScore can still skip documents that cannot enter the heap. A document scoring below
 * the worst heap entry can neither add a passage nor improve one already in the heap (those score higher), so
 * skipping it is safe; equal scores are still collected, because ties are broken by passage id.
 *
 * <p>Order: score descending, then passage id ascending (code points); a passage's mention is its best-scoring
 * one, ties going to the smaller mention id.
 */
final class CollapseCollector implements Collector {
  static final class Entry {
    final int passage;
    float score;
    int doc;

    Entry(int passage, float score, int doc) {
      this.passage = passage;
      this.score = score;
      this.doc = doc;
    }
  }

  /** Worst first: lower score, then larger passage ordinal. */
  private static int worstFirst(Entry a, Entry b) {
    int c = Float.compare(a.score, b.score);
    return c != 0 ? c : Integer.compare(b.passage, a.passage);
  }

  private final int k;
  private final IndexIds ids;
  private final PriorityQueue<Entry> heap;
  private final Map<Integer, Entry> inHeap = new HashMap<>();

  CollapseCollector(IndexIds ids, int k) {
    this.k = k;
    this.ids = ids;
    this.heap = new PriorityQueue<>(Math.max(1, k), CollapseCollector::worstFirst);
  }

  @Override
  public ScoreMode scoreMode() {
    return ScoreMode.TOP_SCORES;
  }

  @Override
  public LeafCollector getLeafCollector(LeafReaderContext context) {
    final int base = context.docBase;
    return new LeafCollector() {
      private Scorable scorer;
      private float minSent = Float.NEGATIVE_INFINITY;

      @Override
      public void setScorer(Scorable s) throws IOException {
        scorer = s;
        minSent = Float.NEGATIVE_INFINITY;
        updateMin();
      }

      @Override
      public void collect(int doc) throws IOException {
        if (offer(base + doc, scorer.score())) {
          updateMin();
        }
      }

      private void updateMin() throws IOException {
        if (heap.size() >= k && k > 0) {
          float worst = heap.peek().score;
          if (worst > minSent) {
            scorer.setMinCompetitiveScore(worst);
            minSent = worst;
          }
        }
      }
    };
  }

  /** Returns true when the heap changed. */
  boolean offer(int doc, float score) {
    if (k <= 0) {
      return false;
    }
    int passage = ids.passage[doc];
    if (passage < 0) {
      return false;
    }
    Entry e = inHeap.get(passage);
    if (e != null) {
      if (score > e.score || (score == e.score && ids.rank[doc] < ids.rank[e.doc])) {
        heap.remove(e);
        e.score = score;
        e.doc = doc;
        heap.add(e);
        return true;
      }
      return false;
    }
    if (heap.size() < k) {
      add(new Entry(passage, score, doc));
      return true;
    }
    Entry worst = heap.peek();
    if (score > worst.score || (score == worst.score && passage < worst.passage)) {
      heap.poll();
      inHeap.remove(worst.passage);
      add(new Entry(passage, score, doc));
      return true;
    }
    return false;
  }

  private void add(Entry e) {
    heap.add(e);
    inHeap.put(e.passage, e);
  }

  /** The collected passages, best first. */
  List<Entry> top() {
    List<Entry> out = new ArrayList<>(heap);
    out.sort((a, b) -> worstFirst(b, a));
    return out;
  }
}
