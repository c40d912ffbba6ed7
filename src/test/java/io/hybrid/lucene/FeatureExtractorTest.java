package io.hybrid.lucene;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

public class FeatureExtractorTest {
  private static DirectoryReader reader;
  private static FeatureExtractor extractor;
  private static final String[] FIELDS = {"mention", "context"};
  private static final String[] TEXTS = {"alpha beta alpha", "beta alpha"};
  private static final int F = FeatureExtractor.FEATURES.length;

  private static Map<String, Map<String, String>> docs() {
    Map<String, Map<String, String>> docs = new LinkedHashMap<>();
    docs.put("p1#0-5", Map.of("mention", "alpha beta", "context", "alpha beta gamma delta alpha"));
    docs.put("p1#6-9", Map.of("mention", "gamma", "context", "alpha beta gamma delta alpha"));
    docs.put("p2#0-5", Map.of("mention", "alpha", "context", "epsilon alpha zeta eta theta beta"));
    docs.put("p3#0-4", Map.of("mention", "zeta", "context", "zeta zeta"));
    return docs;
  }

  @BeforeClass
  public static void setUp() throws Exception {
    reader = TestIndex.build(docs());
    extractor = new FeatureExtractor(reader, TestIndex.ANALYZER, 0.9f, 0.4f, 1000f);
  }

  @AfterClass
  public static void tearDown() throws Exception {
    extractor.close();
    reader.close();
  }

  private static int doc(String id) throws Exception {
    return new IndexSearcher(reader).search(new TermQuery(new Term("id", id)), 1).scoreDocs[0].doc;
  }

  @Test
  public void bm25EqualsLuceneExplain() throws Exception {
    IndexSearcher searcher = new IndexSearcher(reader);
    searcher.setSimilarity(new BM25Similarity(0.9f, 0.4f));
    String[] ids = {"p1#0-5", "p1#6-9", "p2#0-5", "p3#0-4"};
    float[][] rows = extractor.features(FIELDS, TEXTS, ids);
    for (int c = 0; c < FIELDS.length; c++) {
      BooleanQuery.Builder q = new BooleanQuery.Builder();
      Map<String, Integer> counts = Analysis.counts(Analysis.tokens(TestIndex.ANALYZER, TEXTS[c]));
      for (Map.Entry<String, Integer> e : counts.entrySet()) {
        q.add(new BoostQuery(new TermQuery(new Term(FIELDS[c], e.getKey())), e.getValue()),
            BooleanClause.Occur.SHOULD);
      }
      BooleanQuery query = q.build();
      for (int i = 0; i < ids.length; i++) {
        float expected = searcher.explain(query, doc(ids[i])).getValue().floatValue();
        assertEquals(ids[i] + " " + FIELDS[c], expected, rows[i][c * F + FeatureExtractor.BM25], 1e-5);
      }
    }
    assertTrue(rows[0][FeatureExtractor.BM25] > 0);
    assertEquals(0f, rows[3][FeatureExtractor.BM25], 0f);
  }

  @Test
  public void severalSegmentsGiveTheSameFeatures() throws Exception {
    try (DirectoryReader segmented = TestIndex.build(docs(), 1);
        FeatureExtractor other = new FeatureExtractor(segmented, TestIndex.ANALYZER, 0.9f, 0.4f, 1000f)) {
      assertTrue(segmented.leaves().size() > 1);
      String[] ids = {"p3#0-4", "p1", "p2#0-5", "p1#6-9"};
      float[][] expected = extractor.features(FIELDS, TEXTS, ids);
      float[][] got = other.features(FIELDS, TEXTS, ids);
      for (int i = 0; i < ids.length; i++) {
        assertArrayEquals(ids[i], expected[i], got[i], 1e-6f);
      }
    }
  }

  @Test
  public void matchCountsLengthsAndSpans() throws Exception {
    float[][] rows = extractor.features(FIELDS, TEXTS, new String[] {"p1#0-5", "p2#0-5", "p3#0-4"});
    int ctx = F; // context channel
    // p1#0-5 context "alpha beta gamma delta alpha": both terms, alpha twice, nearest pair at positions 0-1
    assertEquals(2f, rows[0][ctx + FeatureExtractor.MATCHED], 0f);
    assertEquals(1f, rows[0][ctx + FeatureExtractor.COVERAGE], 0f);
    assertEquals(3f, rows[0][ctx + FeatureExtractor.TF], 0f);
    assertEquals(5f, rows[0][ctx + FeatureExtractor.LENGTH], 0f);
    assertEquals(2f, rows[0][ctx + FeatureExtractor.MIN_SPAN], 0f);
    assertEquals(1f, rows[0][ctx + FeatureExtractor.PROXIMITY], 0f);
    // p2#0-5 context "epsilon alpha zeta eta theta beta": alpha at 1, beta at 5
    assertEquals(6f, rows[1][ctx + FeatureExtractor.LENGTH], 0f);
    assertEquals(5f, rows[1][ctx + FeatureExtractor.MIN_SPAN], 0f);
    assertEquals(0.4f, rows[1][ctx + FeatureExtractor.PROXIMITY], 1e-6);
    // p2#0-5 mention "alpha": one of two distinct query terms
    assertEquals(1f, rows[1][FeatureExtractor.MATCHED], 0f);
    assertEquals(0.5f, rows[1][FeatureExtractor.COVERAGE], 0f);
    assertEquals(1f, rows[1][FeatureExtractor.MIN_SPAN], 0f);
    // p3 matches nothing
    assertEquals(0f, rows[2][ctx + FeatureExtractor.MATCHED], 0f);
    assertEquals(0f, rows[2][ctx + FeatureExtractor.MIN_SPAN], 0f);
    assertEquals(2f, rows[2][ctx + FeatureExtractor.LENGTH], 0f);
  }

  @Test
  public void queryLikelihoodFollowsTheDocumentedFormula() throws Exception {
    float[][] rows = extractor.features(FIELDS, TEXTS, new String[] {"p1#0-5", "p3#0-4"});
    double tokens = reader.getSumTotalTermFreq("context");
    double pAlpha = (reader.totalTermFreq(new Term("context", "alpha")) + 1.0) / (tokens + 1.0);
    double pBeta = (reader.totalTermFreq(new Term("context", "beta")) + 1.0) / (tokens + 1.0);
    double mu = 1000;
    double p1 = Math.log((2 + mu * pAlpha) / (5 + mu)) + Math.log((1 + mu * pBeta) / (5 + mu));
    double p3 = Math.log(mu * pAlpha / (2 + mu)) + Math.log(mu * pBeta / (2 + mu));
    assertEquals(p1, rows[0][F + FeatureExtractor.QL], 1e-5);
    assertEquals(p3, rows[1][F + FeatureExtractor.QL], 1e-5);
  }

  @Test
  public void passageIdsPickTheBestMentionAndUnknownIdsAreZero() throws Exception {
    String[] candidates = {"p1", "nope", "p1#6-9"};
    byte[] raw = extractor.extract(FIELDS, new String[] {TEXTS[0], TEXTS[1]}, candidates, new int[] {0, 3}, 1);
    ByteBuffer buf = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
    int width = FIELDS.length * F;
    float[] values = new float[3 * width];
    buf.asFloatBuffer().get(values);
    buf.position(values.length * 4);
    int[] docs = new int[3];
    buf.slice().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(docs);
    assertEquals("p1#0-5", extractor.docId(docs[0]));
    assertEquals(-1, docs[1]);
    assertEquals("p1#6-9", extractor.docId(docs[2]));
    float[][] direct = extractor.features(FIELDS, TEXTS, new String[] {"p1#0-5"});
    for (int j = 0; j < width; j++) {
      assertEquals(direct[0][j], values[j], 0f);
      assertEquals(0f, values[width + j], 0f);
    }
  }

  @Test
  public void batchAndThreadsGiveTheSameMatrix() throws Exception {
    String[] texts = {TEXTS[0], TEXTS[1], "zeta", "gamma delta"};
    String[] candidates = {"p1#0-5", "p2#0-5", "p3#0-4", "p1#6-9", "p3#0-4"};
    int[] offsets = {0, 3, 5};
    byte[] one = extractor.extract(FIELDS, texts, candidates, offsets, 1);
    byte[] two = extractor.extract(FIELDS, texts, candidates, offsets, 2);
    assertArrayEquals(one, two);
    float[][] second = extractor.features(FIELDS, new String[] {"zeta", "gamma delta"},
        new String[] {"p1#6-9", "p3#0-4"});
    ByteBuffer buf = ByteBuffer.wrap(one).order(ByteOrder.LITTLE_ENDIAN);
    int width = FIELDS.length * F;
    for (int j = 0; j < width; j++) {
      assertEquals(second[1][j], buf.getFloat((4 * width + j) * 4), 0f);
    }
  }

  @Test
  public void minSpanOfInterleavedPositions() {
    int[][] positions = {{2, 10, 30}, {1, 14}, {0, 0}, {12}};
    // one of each of {2, 10, 30}, {1, 14}, {12}: the tightest is 10, 12, 14 (width 5)
    assertEquals(5, FeatureExtractor.minSpan(new int[] {3, 2, 0, 1}, positions));
    assertEquals(1, FeatureExtractor.minSpan(new int[] {1, 0, 0, 0}, positions));
    assertEquals(0, FeatureExtractor.minSpan(new int[] {0, 0, 0, 0}, positions));
  }
}
