package io.hybrid.lucene;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FieldInfos;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.Collector;
import org.apache.lucene.search.ConstantScoreQuery;
import org.apache.lucene.search.FieldDoc;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.LeafCollector;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.QueryVisitor;
import org.apache.lucene.search.Scorable;
import org.apache.lucene.search.ScoreMode;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TermStatistics;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopFieldDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

/**
 * An {@link IndexSearcher} over one shard of a sharded index that scores with collection-wide statistics.
 *
 * <p>Why: BM25's idf needs the document frequency of a term and the number of documents, and its length
 * normalisation needs the average field length. A shard alone would take them from its own documents, so the same
 * document would score differently depending on the shard it sits in, and per-shard rankings could not be merged
 * into the ranking of one index (Elasticsearch's "dfs" problem). Here the caller first asks every shard for its
 * local statistics of the query terms ({@link #localTermStatistics}, {@link #localCollectionStatistics}), sums them,
 * and hands the totals to every shard ({@link #setTermStatistics}, {@link #setCollectionStatistics}). Lucene's
 * scoring asks the searcher for statistics through {@link #termStatistics} and {@link #collectionStatistics}; both
 * are overridden to answer with the totals, so each shard scores every document bit for bit as one index over the
 * whole collection would (Lucene stores length norms per document, independent of the other documents).
 *
 * <p>Hits come back ordered by score descending, then by the {@code id} field ascending (byte order), exactly
 * Anserini's {@code BREAK_SCORE_TIES_BY_DOCID} order, so per-shard top-k lists merge by the same key into the
 * single-index top-k. Scores are raw Lucene scores; Anserini's tie adjustment (rounding to 1e-4) is applied by the
 * caller after merging.
 *
 * <p>Once any global statistics are set the searcher is strict: a scoring term or field without a global value
 * throws, because silently falling back to local values would give plausible but wrong (unmergeable) scores.
 */
public class GlobalStatsSearcher extends IndexSearcher {
  /** Anserini's document id field (stored, with sorted doc values). */
  public static final String ID = "id";

  private static final Sort SCORE_THEN_ID =
      new Sort(SortField.FIELD_SCORE, new SortField(ID, SortField.Type.STRING_VAL));
  /** Bounds the memory of the accumulated term statistics (global values never change, so clearing is safe). */
  private static final int MAX_TERMS = 1 << 21;

  private static final ExecutorService POOL =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "hybrid-shards");
            t.setDaemon(true);
            return t;
          });

  private final ConcurrentHashMap<Term, long[]> globalTerms = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, CollectionStatistics> globalFields = new ConcurrentHashMap<>();
  /** Fields whose collection-wide document count is zero (Lucene answers null for them). */
  private final Set<String> emptyFields = ConcurrentHashMap.newKeySet();

  private volatile boolean global = false;

  /**
   * The hits of one query, best first: ids and raw scores; for passage hits collapsed from mention documents
   * ({@link #topPassages}) also the id of each passage's best mention (else null).
   */
  public static final class TopHits {
    public final String[] ids;
    public final float[] scores;
    public final String[] mentions;

    public TopHits(String[] ids, float[] scores, String[] mentions) {
      this.ids = ids;
      this.scores = scores;
      this.mentions = mentions;
    }

    public int size() {
      return ids.length;
    }
  }

  public GlobalStatsSearcher(IndexReader reader) {
    super(reader);
  }

  /** Opens the Lucene index in {@code path}; close it with {@link #close()}. */
  public static GlobalStatsSearcher open(String path) throws IOException {
    return new GlobalStatsSearcher(DirectoryReader.open(FSDirectory.open(Paths.get(path))));
  }

  public void close() throws IOException {
    getIndexReader().close();
  }

  /** BM25 with Anserini's parameterisation ({@code SimpleSearcher.set_bm25}). */
  public void setBM25(float k1, float b) {
    setSimilarity(new BM25Similarity(k1, b));
  }

  // ---- the shard's own statistics (the "dfs" phase) ------------------------------------------------------------

  /** Names of the indexed fields of this shard. */
  public String[] fieldNames() {
    List<String> names = new ArrayList<>();
    for (FieldInfo info : FieldInfos.getMergedFieldInfos(getIndexReader())) {
      if (info.getIndexOptions() != IndexOptions.NONE) {
        names.add(info.name);
      }
    }
    String[] out = names.toArray(new String[0]);
    Arrays.sort(out);
    return out;
  }

  /** {maxDoc, docCount, sumTotalTermFreq, sumDocFreq} of {@code field} in this shard (zeros if it is absent). */
  public long[] localCollectionStatistics(String field) throws IOException {
    long docCount = 0;
    long sumTotalTermFreq = 0;
    long sumDocFreq = 0;
    for (LeafReaderContext leaf : getIndexReader().leaves()) {
      Terms terms = Terms.getTerms(leaf.reader(), field);
      docCount += terms.getDocCount();
      sumTotalTermFreq += terms.getSumTotalTermFreq();
      sumDocFreq += terms.getSumDocFreq();
    }
    return new long[] {getIndexReader().maxDoc(), docCount, sumTotalTermFreq, sumDocFreq};
  }

  /** {docFreq, totalTermFreq} of each (field, term) pair in this shard, flattened: 2 values per pair. */
  public long[] localTermStatistics(String[] fields, String[] terms) throws IOException {
    if (fields.length != terms.length) {
      throw new IllegalArgumentException("fields and terms differ in length");
    }
    IndexReader reader = getIndexReader();
    long[] out = new long[2 * fields.length];
    for (int i = 0; i < fields.length; i++) {
      Term term = new Term(fields[i], terms[i]);
      out[2 * i] = reader.docFreq(term);
      out[2 * i + 1] = reader.totalTermFreq(term);
    }
    return out;
  }

  /** The scoring terms of a query (not those under MUST_NOT), flattened as field, text, field, text, ... */
  public static String[] queryTerms(Query query) {
    Set<Term> terms = new TreeSet<>();
    query.visit(QueryVisitor.termCollector(terms));
    String[] out = new String[2 * terms.size()];
    int i = 0;
    for (Term term : terms) {
      out[i++] = term.field();
      out[i++] = term.text();
    }
    return out;
  }

  // ---- collection-wide statistics ----------------------------------------------------------------------------

  /** Sets the collection-wide statistics of one field (sums over all shards). */
  public void setCollectionStatistics(
      String field, long maxDoc, long docCount, long sumTotalTermFreq, long sumDocFreq) {
    if (docCount == 0) {
      globalFields.remove(field);
      emptyFields.add(field);
    } else {
      emptyFields.remove(field);
      globalFields.put(field, new CollectionStatistics(field, maxDoc, docCount, sumTotalTermFreq, sumDocFreq));
    }
    global = true;
  }

  /**
   * Adds collection-wide {docFreq, totalTermFreq} for (field, term) pairs, flattened like {@link
   * #localTermStatistics}. Pairs with docFreq 0 match no document anywhere and are skipped.
   */
  public void setTermStatistics(String[] fields, String[] terms, long[] stats) {
    if (fields.length != terms.length || stats.length != 2 * fields.length) {
      throw new IllegalArgumentException("need 2 statistics per (field, term) pair");
    }
    if (globalTerms.size() + fields.length > MAX_TERMS) {
      globalTerms.clear();
    }
    for (int i = 0; i < fields.length; i++) {
      if (stats[2 * i] > 0) {
        globalTerms.put(new Term(fields[i], terms[i]), new long[] {stats[2 * i], stats[2 * i + 1]});
      }
    }
    global = true;
  }

  public void clearTermStatistics() {
    globalTerms.clear();
  }

  public boolean usesGlobalStatistics() {
    return global;
  }

  @Override
  public TermStatistics termStatistics(Term term, int docFreq, long totalTermFreq) throws IOException {
    if (!global) {
      return super.termStatistics(term, docFreq, totalTermFreq);
    }
    long[] stats = globalTerms.get(term);
    if (stats == null) {
      throw new IllegalStateException(
          "no collection-wide statistics for term " + term + "; register the query's terms first");
    }
    return new TermStatistics(BytesRef.deepCopyOf(term.bytes()), stats[0], stats[1]);
  }

  @Override
  public CollectionStatistics collectionStatistics(String field) throws IOException {
    if (!global) {
      return super.collectionStatistics(field);
    }
    CollectionStatistics stats = globalFields.get(field);
    if (stats == null && !emptyFields.contains(field)) {
      throw new IllegalStateException("no collection-wide statistics for field " + field);
    }
    return stats;
  }

  // ---- search ------------------------------------------------------------------------------------------------

  /**
   * Top {@code k} by (score desc, id asc), raw scores.
   *
   * <p>A hit's id is the sort value the collector already read (Anserini's {@code id} doc values, the bytes of the
   * stored id): reading the stored field instead decompresses the stored block of every hit (a passage's whole
   * JSON), ~95% of a 300-query passage search at depth 289. A document without the doc value falls back to it.
   */
  public TopHits topHits(Query query, int k) throws IOException {
    TopFieldDocs docs = search(query, k, SCORE_THEN_ID, true);
    StoredFields stored = null;
    String[] ids = new String[docs.scoreDocs.length];
    float[] scores = new float[docs.scoreDocs.length];
    for (int i = 0; i < ids.length; i++) {
      FieldDoc hit = (FieldDoc) docs.scoreDocs[i];
      if (hit.fields[1] instanceof BytesRef id) {
        ids[i] = id.utf8ToString();
      } else {
        stored = stored != null ? stored : storedFields();
        ids[i] = stored.document(hit.doc, Set.of(ID)).get(ID);
      }
      scores[i] = hit.score;
    }
    return new TopHits(ids, scores, null);
  }

  /**
   * Top {@code k} passages of a query over mention documents (ids {@code <passage id>#<start>-<end>}): a passage
   * scores its best mention ("best mention wins"; ties: the smaller mention id), passages sort by (score desc,
   * passage id asc). Collapsing while collecting is exact without over-fetching and keeps Lucene's block-max
   * skipping (see {@link PassageCollector}).
   */
  public TopHits topPassages(Query query, int k) throws IOException {
    PassageCollector collector = new PassageCollector(k);
    search(query, collector);
    return collector.top();
  }

  /** A stored field of the document with this id, or null (e.g. {@code raw} for the annotated passage JSON). */
  public String stored(String id, String field) throws IOException {
    TopDocs docs = search(new ConstantScoreQuery(new TermQuery(new Term(ID, id))), 1);
    if (docs.scoreDocs.length == 0) {
      return null;
    }
    return storedFields().document(docs.scoreDocs[0].doc, Set.of(field)).get(field);
  }

  /**
   * Every query on every shard (on up to {@code threads} threads), merged per query into the top {@code k} by
   * (score desc, id asc). The shards of one process share this call so a single Python call fans out in parallel.
   */
  public static TopHits[] searchShards(
      GlobalStatsSearcher[] shards, Query[] queries, int k, int threads, boolean passages) throws IOException {
    int n = queries.length;
    int s = shards.length;
    TopHits[][] parts = new TopHits[n][s];
    int tasks = n * s;
    int workers = Math.max(1, Math.min(threads, tasks));
    if (workers == 1) {
      for (int t = 0; t < tasks; t++) {
        parts[t / s][t % s] = shards[t % s].top(queries[t / s], k, passages);
      }
    } else {
      AtomicInteger next = new AtomicInteger();
      List<Future<Void>> futures = new ArrayList<>(workers);
      for (int w = 0; w < workers; w++) {
        futures.add(
            POOL.submit(
                () -> {
                  for (int t = next.getAndIncrement(); t < tasks; t = next.getAndIncrement()) {
                    parts[t / s][t % s] = shards[t % s].top(queries[t / s], k, passages);
                  }
                  return null;
                }));
      }
      for (Future<Void> future : futures) {
        try {
          future.get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", e);
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof IOException) {
            throw (IOException) cause;
          }
          if (cause instanceof RuntimeException) {
            throw (RuntimeException) cause;
          }
          throw new IOException(cause);
        }
      }
    }
    TopHits[] out = new TopHits[n];
    for (int q = 0; q < n; q++) {
      out[q] = merge(parts[q], k);
    }
    return out;
  }

  private TopHits top(Query query, int k, boolean passages) throws IOException {
    return passages ? topPassages(query, k) : topHits(query, k);
  }

  /** k-way merge of lists each sorted by (score desc, id asc); ids compared as UTF-8 bytes like Lucene. */
  public static TopHits merge(TopHits[] lists, int k) {
    if (lists.length == 1) {
      return lists[0];
    }
    int total = 0;
    for (TopHits list : lists) {
      total += list.size();
    }
    int size = Math.min(k, total);
    String[] ids = new String[size];
    float[] scores = new float[size];
    String[] mentions = lists[0].mentions == null ? null : new String[size];
    int[] at = new int[lists.length];
    BytesRef[] heads = new BytesRef[lists.length];
    for (int i = 0; i < size; i++) {
      int best = -1;
      for (int l = 0; l < lists.length; l++) {
        if (at[l] >= lists[l].size()) {
          continue;
        }
        if (heads[l] == null) {
          heads[l] = new BytesRef(lists[l].ids[at[l]]);
        }
        if (best < 0 || before(lists[l].scores[at[l]], heads[l], lists[best].scores[at[best]], heads[best])) {
          best = l;
        }
      }
      ids[i] = lists[best].ids[at[best]];
      scores[i] = lists[best].scores[at[best]];
      if (mentions != null) {
        mentions[i] = lists[best].mentions[at[best]];
      }
      at[best]++;
      heads[best] = null;
    }
    return new TopHits(ids, scores, mentions);
  }

  private static boolean before(float score, BytesRef id, float otherScore, BytesRef otherId) {
    int byScore = Float.compare(otherScore, score);
    return byScore < 0 || (byScore == 0 && id.compareTo(otherId) < 0);
  }

  /**
   * Collects the top k passages by their best mention while searching.
   *
   * <p>A min-heap holds the current top k passages (worst first: lower score, then larger passage id) and a map
   * finds a passage's entry. Once the heap is full its worst score is the minimum competitive score, so Lucene may
   * skip documents scoring below it: such a document can neither add a passage (k better ones exist) nor improve
   * one in the heap (those already score higher). Documents scoring exactly the minimum are still collected,
   * because ties are broken by passage id, and mention ties by mention id. A passage pushed out of the heap can
   * never come back with the same or a lower score, since everything in the heap then ranks above it.
   */
  private static final class PassageCollector implements Collector {
    private static final class Entry {
      final BytesRef passage;
      BytesRef mention;
      float score;

      Entry(BytesRef passage, BytesRef mention, float score) {
        this.passage = passage;
        this.mention = mention;
        this.score = score;
      }
    }

    /** Negative when {@code a} ranks below {@code b}. */
    private static int rank(float aScore, BytesRef aPassage, float bScore, BytesRef bPassage) {
      int byScore = Float.compare(aScore, bScore);
      return byScore != 0 ? byScore : bPassage.compareTo(aPassage);
    }

    private final int k;
    private final PriorityQueue<Entry> heap;
    private final HashMap<BytesRef, Entry> byPassage = new HashMap<>();

    PassageCollector(int k) {
      this.k = Math.max(1, k);
      this.heap = new PriorityQueue<>(this.k, (a, b) -> rank(a.score, a.passage, b.score, b.passage));
    }

    @Override
    public ScoreMode scoreMode() {
      return ScoreMode.TOP_SCORES;
    }

    @Override
    public LeafCollector getLeafCollector(LeafReaderContext context) throws IOException {
      final BinaryDocValues ids = DocValues.getBinary(context.reader(), ID); // Anserini's id doc values
      return new LeafCollector() {
        private Scorable scorer;

        @Override
        public void setScorer(Scorable scorer) throws IOException {
          this.scorer = scorer;
          competitive();
        }

        private void competitive() throws IOException {
          if (heap.size() >= k) {
            scorer.setMinCompetitiveScore(heap.peek().score);
          }
        }

        @Override
        public void collect(int doc) throws IOException {
          float score = scorer.score();
          if (heap.size() >= k && score < heap.peek().score) {
            return;
          }
          if (!ids.advanceExact(doc)) {
            throw new IllegalStateException("mention document without an id (doc " + doc + ")");
          }
          BytesRef mention = ids.binaryValue();
          int cut = mention.offset + mention.length - 1;
          while (cut >= mention.offset && mention.bytes[cut] != '#') {
            cut--;
          }
          if (cut < mention.offset) {
            throw new IllegalStateException("not a mention id: " + mention.utf8ToString());
          }
          BytesRef passage = new BytesRef(mention.bytes, mention.offset, cut - mention.offset);
          Entry entry = byPassage.get(passage);
          if (entry != null) {
            if (score > entry.score || (score == entry.score && mention.compareTo(entry.mention) < 0)) {
              heap.remove(entry);
              entry.score = score;
              entry.mention = BytesRef.deepCopyOf(mention);
              heap.add(entry);
              competitive();
            }
            return;
          }
          if (heap.size() >= k) {
            Entry worst = heap.peek();
            if (rank(score, passage, worst.score, worst.passage) <= 0) {
              return;
            }
            heap.poll();
            byPassage.remove(worst.passage);
          }
          Entry added = new Entry(BytesRef.deepCopyOf(passage), BytesRef.deepCopyOf(mention), score);
          heap.add(added);
          byPassage.put(added.passage, added);
          competitive();
        }
      };
    }

    TopHits top() {
      Entry[] entries = heap.toArray(new Entry[0]);
      Arrays.sort(entries, (a, b) -> rank(b.score, b.passage, a.score, a.passage));
      String[] ids = new String[entries.length];
      float[] scores = new float[entries.length];
      String[] mentions = new String[entries.length];
      for (int i = 0; i < entries.length; i++) {
        ids[i] = entries[i].passage.utf8ToString();
        scores[i] = entries[i].score;
        mentions[i] = entries[i].mention.utf8ToString();
      }
      return new TopHits(ids, scores, mentions);
    }
  }
}
