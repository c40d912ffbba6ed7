package io.hybrid.lucene;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.util.Bits;

/**
 * The external ids of an Anserini index, read once and parsed.
 *
 * <p>A hybrid mention index names each Lucene document {@code <passage_id>#<start>-<end>}. Collapsing hits to
 * passages, breaking ties and resolving candidate ids all need that parse for every hit, so it is done here once
 * per index (about 0.1 s for 86k documents) instead of once per hit. Ids that are not mention ids (a passage
 * index) map to themselves with span -1.
 *
 * <p>All orders are Unicode code point orders, which is how Python compares strings, so ties broken here come out
 * the same as ties broken by {@code sorted()} on the Python side.
 */
final class IndexIds {
  static final String ID_FIELD = "id";

  /** External id per global Lucene doc id; null for deleted documents or documents without an id. */
  final String[] ids;
  /** Passage ordinal (index into {@link #passageIds}) per doc; -1 when unknown. */
  final int[] passage;
  /** Mention span per doc; -1 when the id is not a mention id. */
  final int[] start;
  final int[] end;
  /** Rank of each doc's external id in code point order (smaller rank wins ties). */
  final int[] rank;
  /** Distinct passage ids in code point order: a passage's ordinal is also its tie-break rank. */
  final String[] passageIds;
  /** Docs of each passage ordinal, in rank order. */
  final int[][] passageDocs;
  private final Map<String, Integer> byId;
  private final Map<String, Integer> byPassage;

  static final Comparator<String> CODE_POINT_ORDER = IndexIds::compareCodePoints;

  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Boolean.compare(i < a.length(), j < b.length());
  }

  IndexIds(IndexReader reader) throws IOException {
    int maxDoc = reader.maxDoc();
    ids = new String[maxDoc];
    for (LeafReaderContext ctx : reader.leaves()) {
      readLeaf(ctx, ids);
    }
    start = new int[maxDoc];
    end = new int[maxDoc];
    passage = new int[maxDoc];
    String[] passageOf = new String[maxDoc];
    Map<String, Integer> idMap = new HashMap<>(maxDoc * 2);
    for (int doc = 0; doc < maxDoc; doc++) {
      start[doc] = -1;
      end[doc] = -1;
      String id = ids[doc];
      if (id == null) {
        continue;
      }
      idMap.put(id, doc);
      passageOf[doc] = id;
      int hash = id.lastIndexOf('#');
      int dash = hash < 0 ? -1 : id.indexOf('-', hash);
      if (hash > 0 && dash > hash + 1 && dash < id.length() - 1) {
        try {
          int s = Integer.parseInt(id.substring(hash + 1, dash));
          int e = Integer.parseInt(id.substring(dash + 1));
          start[doc] = s;
          end[doc] = e;
          passageOf[doc] = id.substring(0, hash);
        } catch (NumberFormatException ex) {
          // not a mention id: the document is its own passage
        }
      }
    }
    byId = idMap;
    passageIds = Arrays.stream(passageOf).filter(p -> p != null).distinct().sorted(CODE_POINT_ORDER)
        .toArray(String[]::new);
    byPassage = new HashMap<>(passageIds.length * 2);
    for (int i = 0; i < passageIds.length; i++) {
      byPassage.put(passageIds[i], i);
    }
    Integer[] order = new Integer[maxDoc];
    int live = 0;
    for (int doc = 0; doc < maxDoc; doc++) {
      passage[doc] = passageOf[doc] == null ? -1 : byPassage.get(passageOf[doc]);
      if (ids[doc] != null) {
        order[live++] = doc;
      }
    }
    Integer[] sorted = Arrays.copyOf(order, live);
    Arrays.sort(sorted, (x, y) -> compareCodePoints(ids[x], ids[y]));
    rank = new int[maxDoc];
    Arrays.fill(rank, Integer.MAX_VALUE);
    List<List<Integer>> members = new ArrayList<>(passageIds.length);
    for (int i = 0; i < passageIds.length; i++) {
      members.add(new ArrayList<>(4));
    }
    for (int r = 0; r < sorted.length; r++) {
      rank[sorted[r]] = r;
      members.get(passage[sorted[r]]).add(sorted[r]);
    }
    passageDocs = new int[passageIds.length][];
    for (int i = 0; i < passageIds.length; i++) {
      passageDocs[i] = members.get(i).stream().mapToInt(Integer::intValue).toArray();
    }
  }

  private static void readLeaf(LeafReaderContext ctx, String[] out) throws IOException {
    LeafReader leaf = ctx.reader();
    Bits live = leaf.getLiveDocs();
    BinaryDocValues values = leaf.getBinaryDocValues(ID_FIELD);
    StoredFields stored = values == null ? leaf.storedFields() : null;
    Set<String> only = Set.of(ID_FIELD);
    for (int doc = 0; doc < leaf.maxDoc(); doc++) {
      if (live != null && !live.get(doc)) {
        continue;
      }
      String id = null;
      if (values != null) {
        if (values.advanceExact(doc)) {
          id = values.binaryValue().utf8ToString();
        }
      } else {
        id = stored.document(doc, only).get(ID_FIELD);
      }
      out[ctx.docBase + doc] = id;
    }
  }

  /** Global doc id of an external id, or -1. */
  int doc(String id) {
    Integer found = byId.get(id);
    return found == null ? -1 : found;
  }

  /** Passage ordinal of a passage id, or -1. */
  int passageOrdinal(String passageId) {
    Integer found = byPassage.get(passageId);
    return found == null ? -1 : found;
  }

  /**
   * The documents a candidate id stands for: the document with that id, else every mention document of the
   * passage with that id, else none.
   */
  int[] resolve(String candidate) {
    int doc = doc(candidate);
    if (doc >= 0) {
      return new int[] {doc};
    }
    int ord = passageOrdinal(candidate);
    return ord < 0 ? new int[0] : passageDocs[ord];
  }
}
