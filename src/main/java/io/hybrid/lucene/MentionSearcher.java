package io.hybrid.lucene;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.sandbox.search.CombinedFieldQuery;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

/**
 * Batch search over a hybrid mention index, collapsed to passages inside Java.
 *
 * <p>Two scoring models over the same mention documents:
 *
 * <ul>
 *   <li><b>boosted sum</b> ({@link #searchBoosted}): a boolean query of {@code (field, term, weight x qtf)} term
 *       clauses, i.e. a weighted sum of per-field BM25 scores. It is built clause by clause in the same order as
 *       {@code MultiFieldBM25.build_query} on the Python side, so both give the same scores;</li>
 *   <li><b>BM25F</b> ({@link #searchCombined}): Lucene's {@link CombinedFieldQuery}, which pools term frequencies
 *       and lengths of the weighted fields into one pseudo-field and saturates once, so a term found in three
 *       fields counts once (with a higher tf), not three times.</li>
 * </ul>
 *
 * <p>Every query may carry a filter (whitespace-separated raw tokens of {@code filterField}, any of which must
 * match; e.g. {@code kind_event kind_unknown}) and an excluded document (a raw {@code excludeField} token, e.g.
 * the query's own docref). Queries run in parallel, hits are collapsed to passages by {@link CollapseCollector},
 * and the result crosses JNI once as a byte array: little-endian int32 counts[nQueries], then, for all hits
 * concatenated, int32 passage ordinals (see {@link #passageIds}), float32 scores, int32 mention starts, int32
 * mention ends.
 *
 * <p>Texts are analysed here with the analyzer the caller passes (pyserini's, so terms match the index), or are
 * whitespace-separated terms when it is null.
 */
public final class MentionSearcher implements Closeable {
  private final IndexReader reader;
  private final boolean ownsReader;
  private final Analyzer analyzer;
  private final String filterField;
  private final String excludeField;
  private final IndexIds ids;
  private final Map<String, IndexSearcher> searchers = new ConcurrentHashMap<>();

  public MentionSearcher(String indexPath, Analyzer analyzer, String filterField, String excludeField)
      throws IOException {
    this(DirectoryReader.open(FSDirectory.open(Paths.get(indexPath))), true, analyzer, filterField, excludeField);
  }

  public MentionSearcher(IndexReader reader, Analyzer analyzer, String filterField, String excludeField)
      throws IOException {
    this(reader, false, analyzer, filterField, excludeField);
  }

  private MentionSearcher(IndexReader reader, boolean owns, Analyzer analyzer, String filterField,
      String excludeField) throws IOException {
    this.reader = reader;
    this.ownsReader = owns;
    this.analyzer = analyzer;
    this.filterField = filterField;
    this.excludeField = excludeField;
    this.ids = new IndexIds(reader);
  }

  /** Passage ids by ordinal (code point order); hits refer to passages by ordinal. */
  public String[] passageIds() {
    return ids.passageIds.clone();
  }

  IndexSearcher searcher(float k1, float b) {
    return searchers.computeIfAbsent(k1 + "/" + b, key -> {
      IndexSearcher s = new IndexSearcher(reader);
      s.setSimilarity(new BM25Similarity(k1, b));
      return s;
    });
  }

  /**
   * The boosted-sum query of one query: for each clause with a non-zero weight, one SHOULD clause per distinct
   * analysed term of its text (first-occurrence order), boosted by weight x term count. Null when no clause has a
   * term.
   */
  public Query boostedQuery(String[] clauseFields, double[] clauseWeights, String[] texts, String filter,
      String exclude) {
    if (clauseFields.length != clauseWeights.length || texts.length != clauseFields.length) {
      throw new IllegalArgumentException("one field, weight and text per clause");
    }
    BooleanQuery.Builder builder = new BooleanQuery.Builder();
    int n = 0;
    Map<String, List<String>> analysed = new java.util.HashMap<>();
    for (int c = 0; c < clauseFields.length; c++) {
      if (clauseWeights[c] == 0) {
        continue;
      }
      List<String> tokens = analysed.computeIfAbsent(texts[c] == null ? "" : texts[c],
          t -> Analysis.tokens(analyzer, t));
      for (Map.Entry<String, Integer> e : Analysis.counts(tokens).entrySet()) {
        Query term = new TermQuery(new Term(clauseFields[c], e.getKey()));
        builder.add(new BoostQuery(term, (float) (clauseWeights[c] * e.getValue())), BooleanClause.Occur.SHOULD);
        n++;
      }
    }
    if (n == 0) {
      return null;
    }
    restrict(builder, filter, exclude);
    return builder.build();
  }

  /**
   * Smallest positive weight used to rescale BM25F weights: Lucene 9.9's CombinedFieldQuery rejects weights
   * below 1. Scaling every weight by 1/m and k1 by 1/m leaves BM25F unchanged (pseudo tf, pseudo length and
   * average length all scale by 1/m, idf uses document counts only) except for the 1-byte length quantisation
   * of the pooled norm.
   */
  static double weightScale(double[] weights) {
    double min = Double.POSITIVE_INFINITY;
    for (double w : weights) {
      if (w < 0 || Double.isNaN(w)) {
        throw new IllegalArgumentException("BM25F field weights must be >= 0, got " + w);
      }
      if (w > 0) {
        min = Math.min(min, w);
      }
    }
    if (min == Double.POSITIVE_INFINITY) {
      throw new IllegalArgumentException("BM25F needs at least one field with a positive weight");
    }
    return Math.min(min, 1.0);
  }

  /**
   * The BM25F query of one query text over the weighted fields (after {@link #weightScale}); null if no term.
   *
   * <p>One {@link CombinedFieldQuery} per distinct query term, boosted by the term's count, in a disjunction:
   * a single CombinedFieldQuery with several terms would pool them all into one pseudo-term (like a synonym
   * query: one idf, one saturated tf), which is not BM25F. This is how Elasticsearch's combined_fields query
   * uses it too.
   */
  public Query combinedQuery(String[] fields, double[] weights, String text, String filter, String exclude) {
    if (fields.length != weights.length) {
      throw new IllegalArgumentException("one weight per field");
    }
    double scale = weightScale(weights);
    List<String> tokens = Analysis.tokens(analyzer, text);
    if (tokens.isEmpty()) {
      return null;
    }
    BooleanQuery.Builder builder = new BooleanQuery.Builder();
    for (Map.Entry<String, Integer> e : Analysis.counts(tokens).entrySet()) {
      CombinedFieldQuery.Builder combined = new CombinedFieldQuery.Builder();
      for (int f = 0; f < fields.length; f++) {
        if (weights[f] > 0) {
          combined.addField(fields[f], (float) (weights[f] / scale));
        }
      }
      combined.addTerm(new BytesRef(e.getKey()));
      builder.add(new BoostQuery(combined.build(), e.getValue()), BooleanClause.Occur.SHOULD);
    }
    restrict(builder, filter, exclude);
    return builder.build();
  }

  private void restrict(BooleanQuery.Builder builder, String filter, String exclude) {
    List<String> filterTerms = Analysis.eachToken(analyzer, filter);
    if (!filterTerms.isEmpty()) {
      BooleanQuery.Builder any = new BooleanQuery.Builder();
      for (String t : filterTerms) {
        any.add(new TermQuery(new Term(filterField, t)), BooleanClause.Occur.SHOULD);
      }
      builder.add(any.build(), BooleanClause.Occur.FILTER);
      // A FILTER clause makes SHOULD clauses optional: require one, or every candidate of the right kind
      // would match with score 0.
      builder.setMinimumNumberShouldMatch(1);
    }
    for (String t : Analysis.eachToken(analyzer, exclude)) {
      builder.add(new TermQuery(new Term(excludeField, t)), BooleanClause.Occur.MUST_NOT);
    }
  }

  /**
   * Boosted-sum search for a batch of queries.
   *
   * @param texts query q's text for clause c at {@code q * nClauses + c}
   * @param filters per query: filter tokens ("" for none); excludes: per query, excluded token ("" for none)
   */
  public byte[] searchBoosted(String[] clauseFields, double[] clauseWeights, String[] texts, String[] filters,
      String[] excludes, float k1, float b, int k, int threads) {
    int nClauses = clauseFields.length;
    int nQueries = filters.length;
    if (nClauses == 0 || texts.length != nQueries * nClauses || excludes.length != nQueries) {
      throw new IllegalArgumentException("texts must hold nQueries x nClauses entries, filters/excludes nQueries");
    }
    Query[] queries = new Query[nQueries];
    Parallel.forEach(nQueries, threads, q -> queries[q] = boostedQuery(clauseFields, clauseWeights,
        java.util.Arrays.copyOfRange(texts, q * nClauses, (q + 1) * nClauses), filters[q], excludes[q]));
    return run(queries, searcher(k1, b), k, threads);
  }

  /** BM25F search for a batch of queries (one text per query). */
  public byte[] searchCombined(String[] fields, double[] weights, String[] texts, String[] filters,
      String[] excludes, float k1, float b, int k, int threads) {
    int nQueries = texts.length;
    if (filters.length != nQueries || excludes.length != nQueries) {
      throw new IllegalArgumentException("one filter and one exclude per query");
    }
    double scale = weightScale(weights);
    Query[] queries = new Query[nQueries];
    Parallel.forEach(nQueries, threads,
        q -> queries[q] = combinedQuery(fields, weights, texts[q], filters[q], excludes[q]));
    return run(queries, searcher((float) (k1 / scale), b), k, threads);
  }

  /** Top-k passages of one Lucene query (for tests and single queries). */
  public List<CollapseCollector.Entry> search(Query query, float k1, float b, int k) throws IOException {
    CollapseCollector collector = new CollapseCollector(ids, k);
    if (query != null) {
      searcher(k1, b).search(query, collector);
    }
    return collector.top();
  }

  private byte[] run(Query[] queries, IndexSearcher searcher, int k, int threads) {
    int n = queries.length;
    @SuppressWarnings("unchecked")
    List<CollapseCollector.Entry>[] results = new List[n];
    Parallel.forEach(n, threads, q -> {
      CollapseCollector collector = new CollapseCollector(ids, k);
      if (queries[q] != null) {
        searcher.search(queries[q], collector);
      }
      results[q] = collector.top();
    });
    int total = 0;
    for (List<CollapseCollector.Entry> r : results) {
      total += r.size();
    }
    ByteBuffer buf = ByteBuffer.allocate(4 * (n + 4 * total)).order(ByteOrder.LITTLE_ENDIAN);
    for (List<CollapseCollector.Entry> r : results) {
      buf.putInt(r.size());
    }
    for (List<CollapseCollector.Entry> r : results) {
      for (CollapseCollector.Entry e : r) {
        buf.putInt(e.passage);
      }
    }
    for (List<CollapseCollector.Entry> r : results) {
      for (CollapseCollector.Entry e : r) {
        buf.putFloat(e.score);
      }
    }
    for (List<CollapseCollector.Entry> r : results) {
      for (CollapseCollector.Entry e : r) {
        buf.putInt(ids.start[e.doc]);
      }
    }
    for (List<CollapseCollector.Entry> r : results) {
      for (CollapseCollector.Entry e : r) {
        buf.putInt(ids.end[e.doc]);
      }
    }
    return buf.array();
  }

  /** External id of the document behind a hit (for tests). */
  String docId(int doc) {
    return ids.ids[doc];
  }

  @Override
  public void close() throws IOException {
    if (ownsReader) {
      reader.close();
    }
  }
}
