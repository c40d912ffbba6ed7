package io.hybrid.lucene;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.junit.Test;

public class MentionSearcherTest {
  private static final String[] VOCAB = {"quake", "storm", "fire", "police", "arrest", "rehab", "oscar", "host"};
  private static final String[] CLAUSE_FIELDS = {"mention", "context", "mention"};
  private static final double[] CLAUSE_WEIGHTS = {1.0, 0.3, 0.5};

  /** 40 passages with 1-4 mentions each, random texts; p00 is an exact copy of p39 (score ties). */
  private static Map<String, Map<String, String>> corpus() {
    Random random = new Random(7);
    Map<String, Map<String, String>> docs = new LinkedHashMap<>();
    for (int p = 39; p >= 1; p--) { // reverse order: Lucene doc order differs from id order
      int mentions = 1 + random.nextInt(4);
      String context = words(random, 8);
      for (int m = 0; m < mentions; m++) {
        String mention = words(random, 1 + random.nextInt(2));
        String kind = random.nextBoolean() ? "kind_event" : "kind_entity";
        docs.put(String.format("p%02d#%d-%d", p, m * 10, m * 10 + 5),
            Map.of("mention", mention, "context", context, "type", kind, "docref", "doc" + p));
      }
    }
    Map<String, Map<String, String>> copies = new LinkedHashMap<>();
    for (Map.Entry<String, Map<String, String>> d : docs.entrySet()) {
      if (d.getKey().startsWith("p39#")) {
        Map<String, String> fields = new HashMap<>(d.getValue());
        fields.put("docref", "doc0");
        copies.put(d.getKey().replace("p39#", "p00#"), fields);
      }
    }
    docs.putAll(copies);
    return docs;
  }

  private static String words(Random random, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "" : " ").append(VOCAB[random.nextInt(VOCAB.length)]);
    }
    return sb.toString();
  }

  /** Score every matching mention, keep each passage's best (ties: smaller id), sort by score then passage id. */
  private static List<String[]> bruteForce(DirectoryReader reader, MentionSearcher searcher, Query query, int k)
      throws Exception {
    IndexSearcher s = new IndexSearcher(reader);
    s.setSimilarity(new BM25Similarity(0.9f, 0.4f));
    Map<String, String[]> best = new HashMap<>();
    for (ScoreDoc sd : s.search(query, reader.maxDoc()).scoreDocs) {
      String id = searcher.docId(sd.doc);
      String passage = id.substring(0, id.indexOf('#'));
      String[] old = best.get(passage);
      float oldScore = old == null ? Float.NEGATIVE_INFINITY : Float.parseFloat(old[2]);
      if (old == null || sd.score > oldScore || (sd.score == oldScore && id.compareTo(old[1]) < 0)) {
        best.put(passage, new String[] {passage, id, Float.toString(sd.score)});
      }
    }
    List<String[]> out = new ArrayList<>(best.values());
    out.sort((a, b) -> {
      int c = Float.compare(Float.parseFloat(b[2]), Float.parseFloat(a[2]));
      return c != 0 ? c : a[0].compareTo(b[0]);
    });
    return out.subList(0, Math.min(k, out.size()));
  }

  @Test
  public void collapsedTopKEqualsBruteForceIncludingTies() throws Exception {
    collapsedTopKEqualsBruteForce(0);
  }

  @Test
  public void collapsingWorksAcrossSegments() throws Exception {
    collapsedTopKEqualsBruteForce(7);
  }

  private void collapsedTopKEqualsBruteForce(int segmentSize) throws Exception {
    try (DirectoryReader reader = TestIndex.build(corpus(), segmentSize);
        MentionSearcher searcher = new MentionSearcher(reader, TestIndex.ANALYZER, "type", "docref")) {
      String[] passages = searcher.passageIds();
      String[][] queries = {
        {"quake", "quake storm fire", "quake"},
        {"police arrest", "police", "rehab"},
        {"oscar host host", "oscar", ""},
      };
      boolean sawTie = false;
      for (String[] texts : queries) {
        Query query = searcher.boostedQuery(CLAUSE_FIELDS, CLAUSE_WEIGHTS, texts, "", "");
        for (int k : new int[] {1, 3, 10, 100}) {
          List<String[]> expected = bruteForce(reader, searcher, query, k);
          List<CollapseCollector.Entry> got = searcher.search(query, 0.9f, 0.4f, k);
          assertEquals(expected.size(), got.size());
          for (int i = 0; i < got.size(); i++) {
            assertEquals(expected.get(i)[0], passages[got.get(i).passage]);
            assertEquals(expected.get(i)[1], searcher.docId(got.get(i).doc));
            assertEquals(Float.parseFloat(expected.get(i)[2]), got.get(i).score, 0f);
            if (i > 0 && got.get(i).score == got.get(i - 1).score) {
              sawTie = true;
            }
          }
        }
      }
      assertTrue("the corpus should produce score ties", sawTie);
    }
  }

  @Test
  public void filterAndExclusion() throws Exception {
    try (DirectoryReader reader = TestIndex.build(corpus());
        MentionSearcher searcher = new MentionSearcher(reader, TestIndex.ANALYZER, "type", "docref")) {
      String[] texts = {"quake storm fire police arrest rehab oscar host", "", ""};
      Query all = searcher.boostedQuery(CLAUSE_FIELDS, CLAUSE_WEIGHTS, texts, "", "");
      Query events = searcher.boostedQuery(CLAUSE_FIELDS, CLAUSE_WEIGHTS, texts, "kind_event", "doc5");
      List<CollapseCollector.Entry> allHits = searcher.search(all, 0.9f, 0.4f, 1000);
      List<CollapseCollector.Entry> eventHits = searcher.search(events, 0.9f, 0.4f, 1000);
      assertTrue(eventHits.size() < allHits.size());
      String[] passages = searcher.passageIds();
      for (CollapseCollector.Entry e : eventHits) {
        assertTrue(!passages[e.passage].equals("p05"));
      }
      assertTrue(allHits.stream().anyMatch(e -> passages[e.passage].equals("p05")));
    }
  }

  @Test
  public void batchBytesMatchSingleSearchesOnAnyThreadCount() throws Exception {
    try (DirectoryReader reader = TestIndex.build(corpus());
        MentionSearcher searcher = new MentionSearcher(reader, TestIndex.ANALYZER, "type", "docref")) {
      String[] texts = {"quake", "quake storm", "quake", "nothingmatches", "", "", "oscar", "host", ""};
      String[] filters = {"kind_event kind_unknown", "", ""};
      String[] excludes = {"", "doc3", ""};
      byte[] one = searcher.searchBoosted(CLAUSE_FIELDS, CLAUSE_WEIGHTS, texts, filters, excludes, 0.9f, 0.4f, 5, 1);
      byte[] two = searcher.searchBoosted(CLAUSE_FIELDS, CLAUSE_WEIGHTS, texts, filters, excludes, 0.9f, 0.4f, 5, 2);
      assertEquals(java.util.Arrays.toString(one), java.util.Arrays.toString(two));
      ByteBuffer buf = ByteBuffer.wrap(one).order(ByteOrder.LITTLE_ENDIAN);
      int[] counts = {buf.getInt(), buf.getInt(), buf.getInt()};
      assertEquals(0, counts[1]);
      int total = counts[0] + counts[2];
      int hit = 0;
      for (int q : new int[] {0, 2}) {
        Query query = searcher.boostedQuery(CLAUSE_FIELDS, CLAUSE_WEIGHTS,
            java.util.Arrays.copyOfRange(texts, q * 3, q * 3 + 3), filters[q], excludes[q]);
        List<CollapseCollector.Entry> single = searcher.search(query, 0.9f, 0.4f, 5);
        assertEquals(single.size(), counts[q]);
        for (CollapseCollector.Entry e : single) {
          int base = 12;
          assertEquals(e.passage, buf.getInt(base + 4 * hit));
          assertEquals(e.score, buf.getFloat(base + 4 * (total + hit)), 0f);
          String id = searcher.docId(e.doc);
          int start = Integer.parseInt(id.substring(id.indexOf('#') + 1, id.indexOf('-', id.indexOf('#'))));
          assertEquals(start, buf.getInt(base + 4 * (2 * total + hit)));
          hit++;
        }
      }
    }
  }

  /**
   * The BM25F property: a query term found in two fields of one document is saturated once, so a document
   * matching two different query terms can beat a document matching one term in two fields; the boosted sum
   * counts that one term twice and ranks the other way round.
   */
  @Test
  public void bm25fScoresATermSpreadAcrossFieldsOnce() throws Exception {
    Map<String, Map<String, String>> docs = new LinkedHashMap<>();
    docs.put("a#0-1", Map.of("mention", "xylo", "context", "xylo"));
    docs.put("b#0-1", Map.of("mention", "xylo", "context", "yak"));
    for (int i = 0; i < 18; i++) { // filler: yak is common in context, xylo is rare
      docs.put(String.format("f%02d#0-1", i), Map.of("mention", "zed", "context", i < 4 ? "yak" : "wam"));
    }
    try (DirectoryReader reader = TestIndex.build(docs);
        MentionSearcher searcher = new MentionSearcher(reader, TestIndex.ANALYZER, "type", "docref")) {
      String[] passages = searcher.passageIds();
      String text = "xylo yak";
      Query sum = searcher.boostedQuery(new String[] {"mention", "context", "mention", "context"},
          new double[] {1, 1, 1, 1}, new String[] {"xylo", "xylo", "yak", "yak"}, "", "");
      List<CollapseCollector.Entry> boosted = searcher.search(sum, 1.2f, 0.75f, 2);
      assertEquals("a", passages[boosted.get(0).passage]);
      assertEquals("b", passages[boosted.get(1).passage]);
      Query bm25f = searcher.combinedQuery(new String[] {"mention", "context"}, new double[] {1, 1}, text, "", "");
      List<CollapseCollector.Entry> combined = searcher.search(bm25f, 1.2f, 0.75f, 2);
      assertEquals("b", passages[combined.get(0).passage]);
      assertEquals("a", passages[combined.get(1).passage]);
    }
  }

  @Test
  public void bm25fAcceptsWeightsBelowOneByRescaling() throws Exception {
    assertEquals(0.25, MentionSearcher.weightScale(new double[] {2.0, 0.25, 0.0}), 0);
    assertEquals(1.0, MentionSearcher.weightScale(new double[] {2.0, 3.0}), 0);
    try (DirectoryReader reader = TestIndex.build(corpus());
        MentionSearcher searcher = new MentionSearcher(reader, TestIndex.ANALYZER, "type", "docref")) {
      String[] fields = {"mention", "context"};
      byte[] scaled = searcher.searchCombined(fields, new double[] {0.5, 0.25}, new String[] {"quake fire"},
          new String[] {""}, new String[] {""}, 0.9f, 0.4f, 10, 1);
      byte[] manual = searcher.searchCombined(fields, new double[] {2.0, 1.0}, new String[] {"quake fire"},
          new String[] {""}, new String[] {""}, 3.6f, 0.4f, 10, 1);
      assertEquals(java.util.Arrays.toString(manual), java.util.Arrays.toString(scaled));
      assertTrue(ByteBuffer.wrap(scaled).order(ByteOrder.LITTLE_ENDIAN).getInt() > 0);
    }
  }
}
