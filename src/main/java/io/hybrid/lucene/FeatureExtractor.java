package io.hybrid.lucene;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.TermState;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.TermStatistics;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.search.similarities.Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

/**
 * Batch per-field features for (query, candidate) pairs, for learning to rank.
 *
 * <p>Lucene's {@code explain} through pyjnius gives one score per JNI round trip (about 1,600/s here). This class
 * takes a whole batch of queries with their candidate lists and returns one dense little-endian float32 matrix,
 * walking each query term's postings once per query over the sorted candidates.
 *
 * <p>A query is a list of <em>channels</em>: an index field plus the query text sent to it (the Python side decides
 * which text, e.g. the query's coreference chain against candidates' {@code mention} field). For every candidate
 * and channel the extractor writes {@link #FEATURES}, in this order:
 *
 * <ul>
 *   <li>{@code bm25}: sum over distinct query terms t of BM25(t, d) with boost qtf(t), computed by Lucene's own
 *       {@link BM25Similarity} scorer (same k1/b and lossy norms as search), so it equals {@code explain} of a
 *       boolean query of boosted term queries;</li>
 *   <li>{@code ql}: Dirichlet-smoothed query log-likelihood, sum_t qtf(t) ln((tf + mu p(t|C)) / (|d| + mu)) over all
 *       query terms, matched or not, with Lucene's collection model p(t|C) = (ttf + 1) / (field tokens + 1) and the
 *       exact field length |d|;</li>
 *   <li>{@code tfidf}: sum_t qtf(t) sqrt(tf) idf(t)^2 with Lucene's classic idf = 1 + ln((N + 1) / (df + 1)), no
 *       length normalisation (length is its own feature);</li>
 *   <li>{@code matched}: distinct query terms present in the field; {@code coverage}: matched / distinct query
 *       terms; {@code tf}: occurrences of query terms in the field;</li>
 *   <li>{@code length}: field length in indexed tokens (exact: counted from the postings, not the lossy norm);</li>
 *   <li>{@code min_span}: width in positions of the smallest window holding every matched query term (0 when
 *       nothing matches, 1 for a single term); {@code proximity}: matched / min_span (0 when nothing matches).</li>
 * </ul>
 *
 * <p>A candidate id is a document id, or a passage id standing for all mention documents of that passage; then
 * the mention with the highest summed BM25 over the channels represents the passage (ties: smaller mention id),
 * the same "best mention wins" rule the searchers use. Unknown ids give a zero row and document -1.
 */
public final class FeatureExtractor implements Closeable {
  public static final String[] FEATURES = {
    "bm25", "ql", "tfidf", "matched", "coverage", "tf", "length", "min_span", "proximity"
  };
  static final int F = FEATURES.length;
  static final int BM25 = 0;
  static final int QL = 1;
  static final int TFIDF = 2;
  static final int MATCHED = 3;
  static final int COVERAGE = 4;
  static final int TF = 5;
  static final int LENGTH = 6;
  static final int MIN_SPAN = 7;
  static final int PROXIMITY = 8;

  private final IndexReader reader;
  private final boolean ownsReader;
  private final IndexSearcher searcher;
  private final Similarity bm25;
  private final Analyzer analyzer;
  private final float mu;
  private final IndexIds ids;
  private final Map<String, CollectionStatistics> collectionStats = new ConcurrentHashMap<>();
  private final Map<String, int[]> lengthCache = new ConcurrentHashMap<>();

  /**
   * @param indexPath a Lucene index directory (a hybrid index's {@code mentions/} or {@code passages/})
   * @param analyzer the analyzer the index was built with (pyserini's), or null when texts are analysed terms
   */
  public FeatureExtractor(String indexPath, Analyzer analyzer, float k1, float b, float mu) throws IOException {
    this(DirectoryReader.open(FSDirectory.open(Paths.get(indexPath))), true, analyzer, k1, b, mu);
  }

  public FeatureExtractor(IndexReader reader, Analyzer analyzer, float k1, float b, float mu) throws IOException {
    this(reader, false, analyzer, k1, b, mu);
  }

  private FeatureExtractor(IndexReader reader, boolean owns, Analyzer analyzer, float k1, float b, float mu)
      throws IOException {
    if (!(mu > 0)) {
      throw new IllegalArgumentException("mu must be > 0, got " + mu);
    }
    this.reader = reader;
    this.ownsReader = owns;
    this.bm25 = new BM25Similarity(k1, b);
    this.searcher = new IndexSearcher(reader);
    this.searcher.setSimilarity(bm25);
    this.analyzer = analyzer;
    this.mu = mu;
    this.ids = new IndexIds(reader);
  }

  public static String[] featureNames() {
    return FEATURES.clone();
  }

  public int numDocs() {
    return reader.numDocs();
  }

  /** External id of a Lucene doc id (as returned by {@link #extract}), or null. */
  public String docId(int doc) {
    return doc < 0 || doc >= ids.ids.length ? null : ids.ids[doc];
  }

  public String[] docIds(int[] docs) {
    String[] out = new String[docs.length];
    for (int i = 0; i < docs.length; i++) {
      out[i] = docId(docs[i]);
    }
    return out;
  }

  /**
   * Features for a batch of queries.
   *
   * @param fields index field of each channel (nChannels)
   * @param texts query text of query q, channel c at {@code q * nChannels + c}
   * @param candidates candidate ids of all queries, concatenated
   * @param offsets query q's candidates are {@code candidates[offsets[q] .. offsets[q + 1])}
   * @param threads worker threads (queries run in parallel)
   * @return little-endian float32 [nCandidates, nChannels * FEATURES.length] (channel-major), then int32
   *     [nCandidates] the Lucene doc each row describes (-1 for unknown ids)
   */
  public byte[] extract(String[] fields, String[] texts, String[] candidates, int[] offsets, int threads) {
    int nQueries = offsets.length - 1;
    int nChannels = fields.length;
    if (nQueries < 0 || texts.length != nQueries * nChannels) {
      throw new IllegalArgumentException("need " + Math.max(nQueries, 0) + " x " + nChannels + " texts, got "
          + texts.length);
    }
    if (offsets[0] != 0 || offsets[nQueries] != candidates.length) {
      throw new IllegalArgumentException("offsets must run from 0 to the number of candidates");
    }
    int width = nChannels * F;
    float[] out = new float[candidates.length * width];
    int[] chosen = new int[candidates.length];
    Parallel.forEach(nQueries, threads, q -> {
      String[] queryTexts = Arrays.copyOfRange(texts, q * nChannels, (q + 1) * nChannels);
      String[] cands = Arrays.copyOfRange(candidates, offsets[q], offsets[q + 1]);
      float[][] rows = new float[cands.length][];
      int[] docs = extractQuery(fields, queryTexts, cands, rows);
      for (int i = 0; i < cands.length; i++) {
        System.arraycopy(rows[i], 0, out, (offsets[q] + i) * width, width);
        chosen[offsets[q] + i] = docs[i];
      }
    });
    ByteBuffer buf = ByteBuffer.allocate(out.length * 4 + chosen.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    buf.asFloatBuffer().put(out);
    buf.position(out.length * 4);
    buf.slice().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().put(chosen);
    return buf.array();
  }

  /** One query's features (for tests and small callers): rows[i] is candidate i's feature row. */
  public float[][] features(String[] fields, String[] texts, String[] candidates) throws IOException {
    float[][] rows = new float[candidates.length][];
    extractQuery(fields, texts, candidates, rows);
    return rows;
  }

  int[] extractQuery(String[] fields, String[] texts, String[] candidates, float[][] rows) throws IOException {
    int width = fields.length * F;
    int[][] docsOf = new int[candidates.length][];
    int total = 0;
    for (int i = 0; i < candidates.length; i++) {
      docsOf[i] = ids.resolve(candidates[i]);
      total += docsOf[i].length;
    }
    int[] unique = new int[total];
    int n = 0;
    for (int[] docs : docsOf) {
      for (int d : docs) {
        unique[n++] = d;
      }
    }
    Arrays.sort(unique);
    int u = 0;
    for (int i = 0; i < n; i++) {
      if (u == 0 || unique[u - 1] != unique[i]) {
        unique[u++] = unique[i];
      }
    }
    unique = Arrays.copyOf(unique, u);
    float[][] perDoc = new float[u][width];
    Map<String, Map<String, Integer>> analysed = new HashMap<>(); // channels often share a query text
    for (int c = 0; c < fields.length; c++) {
      String text = texts[c] == null ? "" : texts[c];
      Map<String, Integer> qtf = analysed.computeIfAbsent(text, x -> Analysis.counts(Analysis.tokens(analyzer, x)));
      channel(fields[c], qtf, unique, perDoc, c * F);
    }
    int[] chosen = new int[candidates.length];
    for (int i = 0; i < candidates.length; i++) {
      int best = -1;
      double bestScore = Double.NEGATIVE_INFINITY;
      for (int d : docsOf[i]) { // rank order, so a strict > keeps the smaller mention id on ties
        float[] row = perDoc[Arrays.binarySearch(unique, d)];
        double s = 0;
        for (int c = 0; c < fields.length; c++) {
          s += row[c * F + BM25];
        }
        if (s > bestScore) {
          bestScore = s;
          best = d;
        }
      }
      chosen[i] = best;
      rows[i] = best < 0 ? new float[width] : perDoc[Arrays.binarySearch(unique, best)].clone();
    }
    return chosen;
  }

  private CollectionStatistics stats(String field) {
    return collectionStats.computeIfAbsent(field, f -> {
      try {
        return searcher.collectionStatistics(f);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    });
  }

  /** Features of one channel for sorted docs, written at column {@code col} of {@code out}. */
  private void channel(String field, Map<String, Integer> qtf, int[] docs, float[][] out, int col)
      throws IOException {
    int nTerms = qtf.size();
    CollectionStatistics cs = stats(field);
    int[] lengths = lengths(field, docs);
    for (int i = 0; i < docs.length; i++) {
      out[i][col + LENGTH] = lengths[i];
    }
    if (nTerms == 0 || cs == null) {
      return;
    }
    BytesRef[] terms = new BytesRef[nTerms];
    int[] boosts = new int[nTerms];
    int t = 0;
    for (Map.Entry<String, Integer> e : qtf.entrySet()) {
      terms[t] = new BytesRef(e.getKey());
      boosts[t++] = e.getValue();
    }
    // One terms-dictionary seek per term and leaf: statistics summed over all leaves (as TermStates does), the
    // term state kept so the candidates' leaves can reopen the postings without seeking again.
    List<LeafReaderContext> leaves = reader.leaves();
    TermsEnum[] enums = new TermsEnum[leaves.size()];
    TermState[][] states = new TermState[leaves.size()][nTerms];
    long[] df = new long[nTerms];
    long[] ttf = new long[nTerms];
    for (int li = 0; li < leaves.size(); li++) {
      Terms fieldTerms = leaves.get(li).reader().terms(field);
      if (fieldTerms == null) {
        continue;
      }
      enums[li] = fieldTerms.iterator();
      for (int k = 0; k < nTerms; k++) {
        if (enums[li].seekExact(terms[k])) {
          states[li][k] = enums[li].termState();
          df[k] += enums[li].docFreq();
          ttf[k] += enums[li].totalTermFreq();
        }
      }
    }
    Similarity.SimScorer[] scorers = new Similarity.SimScorer[nTerms];
    double[] pc = new double[nTerms];
    double[] idf2 = new double[nTerms];
    double tokens = cs.sumTotalTermFreq();
    for (int k = 0; k < nTerms; k++) {
      if (df[k] > 0) {
        scorers[k] = bm25.scorer(boosts[k], cs, new TermStatistics(terms[k], df[k], Math.max(ttf[k], df[k])));
      }
      pc[k] = (ttf[k] + 1.0) / (tokens + 1.0);
      double idf = 1.0 + Math.log((cs.docCount() + 1.0) / (df[k] + 1.0));
      idf2[k] = idf * idf;
    }
    int[] freq = new int[nTerms];
    int[][] positions = new int[nTerms][8];
    int i = 0;
    while (i < docs.length) {
      int li = ReaderUtil.subIndex(docs[i], leaves);
      LeafReaderContext ctx = leaves.get(li);
      int endDoc = ctx.docBase + ctx.reader().maxDoc();
      int j = i;
      while (j < docs.length && docs[j] < endDoc) {
        j++;
      }
      LeafReader leaf = ctx.reader();
      Terms fieldTerms = leaf.terms(field);
      PostingsEnum[] postings = new PostingsEnum[nTerms];
      if (fieldTerms != null) {
        boolean hasPositions = fieldTerms.hasPositions();
        for (int k = 0; k < nTerms; k++) {
          if (states[li][k] != null) {
            enums[li].seekExact(terms[k], states[li][k]);
            postings[k] = enums[li].postings(null, hasPositions ? PostingsEnum.POSITIONS : PostingsEnum.FREQS);
          }
        }
      }
      NumericDocValues norms = leaf.getNormValues(field);
      for (int d = i; d < j; d++) {
        int local = docs[d] - ctx.docBase;
        long norm = 1L;
        if (norms != null) {
          norm = norms.advanceExact(local) ? norms.longValue() : 0L;
        }
        double bm25Sum = 0;
        double ql = 0;
        double tfidf = 0;
        int matched = 0;
        int tfSum = 0;
        double dl = lengths[d];
        for (int k = 0; k < nTerms; k++) {
          PostingsEnum pe = postings[k];
          freq[k] = 0;
          if (pe != null) {
            int at = pe.docID() < local ? pe.advance(local) : pe.docID();
            if (at == local) {
              int f = pe.freq();
              freq[k] = f;
              if (positions[k].length < f) {
                positions[k] = new int[Math.max(f, positions[k].length * 2)];
              }
              if (fieldTerms.hasPositions()) {
                for (int p = 0; p < f; p++) {
                  positions[k][p] = pe.nextPosition();
                }
              }
            }
          }
          int f = freq[k];
          ql += boosts[k] * Math.log((f + mu * pc[k]) / (dl + mu));
          if (f > 0) {
            matched++;
            tfSum += f;
            bm25Sum += scorers[k].score(f, norm);
            tfidf += boosts[k] * Math.sqrt(f) * idf2[k];
          }
        }
        float[] row = out[d];
        row[col + BM25] = (float) bm25Sum;
        row[col + QL] = (float) ql;
        row[col + TFIDF] = (float) tfidf;
        row[col + MATCHED] = matched;
        row[col + COVERAGE] = (float) matched / nTerms;
        row[col + TF] = tfSum;
        if (matched > 0) {
          int span = fieldTerms.hasPositions() ? minSpan(freq, positions) : 0;
          row[col + MIN_SPAN] = span;
          row[col + PROXIMITY] = span > 0 ? (float) matched / span : 0f;
        }
      }
      i = j;
    }
  }

  /**
   * Exact field lengths (indexed tokens) of sorted docs. Lucene keeps only a lossy 1-byte norm per document, so
   * the first use of a field counts every document's tokens in one pass over the field's postings (tens of
   * milliseconds for the ECB+ mention index; far cheaper than decompressing term vectors per candidate) and
   * keeps the array.
   */
  private int[] lengths(String field, int[] docs) {
    int[] all = lengthCache.computeIfAbsent(field, f -> {
      int[] counts = new int[reader.maxDoc()];
      try {
        for (LeafReaderContext ctx : reader.leaves()) {
          Terms terms = ctx.reader().terms(f);
          if (terms == null) {
            continue;
          }
          TermsEnum te = terms.iterator();
          PostingsEnum pe = null;
          while (te.next() != null) {
            pe = te.postings(pe, PostingsEnum.FREQS);
            for (int d = pe.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = pe.nextDoc()) {
              counts[ctx.docBase + d] += pe.freq();
            }
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return counts;
    });
    int[] out = new int[docs.length];
    for (int i = 0; i < docs.length; i++) {
      out[i] = all[docs[i]];
    }
    return out;
  }

  /**
   * Smallest window (in positions) holding one occurrence of every matched term: a k-way walk over the terms'
   * position lists (ascending, as postings deliver them), always advancing the list at the window's left end.
   */
  static int minSpan(int[] freq, int[][] positions) {
    int m = freq.length;
    int[] ptr = new int[m];
    int best = Integer.MAX_VALUE;
    boolean any = false;
    for (int k = 0; k < m; k++) {
      any |= freq[k] > 0;
    }
    if (!any) {
      return 0;
    }
    while (true) {
      int lo = Integer.MAX_VALUE;
      int hi = Integer.MIN_VALUE;
      int loList = -1;
      for (int k = 0; k < m; k++) {
        if (freq[k] == 0) {
          continue;
        }
        int v = positions[k][ptr[k]];
        if (v < lo) {
          lo = v;
          loList = k;
        }
        hi = Math.max(hi, v);
      }
      best = Math.min(best, hi - lo + 1);
      if (++ptr[loList] >= freq[loList]) {
        return best;
      }
    }
  }

  @Override
  public void close() throws IOException {
    if (ownsReader) {
      reader.close();
    }
  }
}
