package io.hybrid.lucene;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.store.FSDirectory;

/**
 * The passages of a hybrid passage index as a dense build reads them: each passage's id, document id, text and the
 * (start, end, kind) of its detected mentions, repeated mentions dropped, parsed from the stored {@code raw} JSON
 * on the Java side.
 *
 * <p>Why: a passage's stored JSON is ~10 KB (169 MB for ECB+'s 15,812 raw passages), ~95% of it the mentions'
 * annotation (context, arguments, chain) that a dense build never reads. Read document by document through pyjnius
 * and decoded by Python's json, all of it crosses into Python: ~80 us a passage, 81 s for a million before the
 * first passage is encoded. Here Jackson's streaming parser skips what is not needed and only the few fields
 * cross, in one call per chunk of passages.
 */
public final class PassageSpans implements Closeable {
  private static final JsonFactory JSON = new JsonFactory();

  private final DirectoryReader reader;

  /** Opens the Lucene index at {@code path} (a hybrid index's {@code passages/}). */
  public PassageSpans(String path) throws IOException {
    reader = DirectoryReader.open(FSDirectory.open(Paths.get(path)));
  }

  @Override
  public void close() throws IOException {
    reader.close();
  }

  /**
   * Documents {@code lo} (inclusive) to {@code hi} (exclusive), in document order. {@code counts[i]} mentions of
   * passage {@code i} follow those of the passages before it in {@code starts}, {@code ends} and {@code kinds}.
   */
  public static final class Chunk {
    public final String[] ids;
    public final String[] docIds;
    public final String[] texts;
    public final int[] counts;
    public final int[] starts;
    public final int[] ends;
    /** Index into {@link #kindNames}, or -1 where the mention has no kind (absent or null). */
    public final int[] kinds;
    public final String[] kindNames;

    Chunk(String[] ids, String[] docIds, String[] texts, int[] counts, int[] starts, int[] ends, int[] kinds,
          String[] kindNames) {
      this.ids = ids;
      this.docIds = docIds;
      this.texts = texts;
      this.counts = counts;
      this.starts = starts;
      this.ends = ends;
      this.kinds = kinds;
      this.kindNames = kindNames;
    }
  }

  /** Passages {@code lo} to {@code hi}; an {@link IOException} names the first document it cannot read. */
  public Chunk read(int lo, int hi) throws IOException {
    int n = Math.max(0, hi - lo);
    String[] ids = new String[n];
    String[] docIds = new String[n];
    String[] texts = new String[n];
    int[] counts = new int[n];
    Ints starts = new Ints();
    Ints ends = new Ints();
    Ints kinds = new Ints();
    Map<String, Integer> kindCodes = new HashMap<>();
    List<String> kindNames = new ArrayList<>();
    Set<String> only = Set.of("raw");
    StoredFields stored = reader.storedFields();
    Set<Key> seen = new HashSet<>();
    for (int i = 0; i < n; i++) {
      int number = lo + i;
      String raw;
      try {
        raw = stored.document(number, only).get("raw");
      } catch (IOException | RuntimeException e) {
        throw new IOException("passage number " + number + ": its stored document cannot be read (" + e + ")", e);
      }
      if (raw == null) {
        throw new IOException("passage number " + number + " has no stored raw JSON");
      }
      seen.clear();
      int before = starts.size;
      boolean mentioned = false;
      try (JsonParser p = JSON.createParser(raw)) {
        if (p.nextToken() != JsonToken.START_OBJECT) {
          throw new IOException("passage number " + number + ": its stored raw JSON is not an object");
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          JsonToken value = p.nextToken();
          switch (name) {
            case "id" -> ids[i] = p.getValueAsString();
            case "doc_id" -> docIds[i] = p.getValueAsString();
            case "contents" -> texts[i] = p.getValueAsString();
            case "mentions" -> {
              if (value != JsonToken.START_ARRAY) {
                throw new IOException("passage number " + number + ": 'mentions' is not a list");
              }
              // a later 'mentions' key replaces an earlier one, as in Python's json
              mentioned = true;
              starts.size = before;
              ends.size = before;
              kinds.size = before;
              seen.clear();
              JsonToken item;
              while ((item = p.nextToken()) == JsonToken.START_OBJECT) {
                readMention(p, number, starts, ends, kinds, kindCodes, kindNames, seen);
              }
              if (item != JsonToken.END_ARRAY) {
                throw new IOException("passage number " + number + ": a mention is not a JSON object");
              }
            }
            default -> p.skipChildren();
          }
        }
      } catch (JsonProcessingException e) {
        throw new IOException("passage number " + number + ": its stored raw JSON does not parse ("
                              + e.getOriginalMessage() + ")", e);
      }
      if (ids[i] == null || docIds[i] == null || texts[i] == null || !mentioned) {
        throw new IOException("passage number " + number + ": its stored raw JSON lacks id, doc_id, contents or "
                              + "mentions");
      }
      counts[i] = starts.size - before;
    }
    return new Chunk(ids, docIds, texts, counts, starts.toArray(), ends.toArray(), kinds.toArray(),
                     kindNames.toArray(new String[0]));
  }

  private static void readMention(JsonParser p, int number, Ints starts, Ints ends, Ints kinds,
                                  Map<String, Integer> kindCodes, List<String> kindNames, Set<Key> seen)
      throws IOException {
    Integer start = null;
    Integer end = null;
    String kind = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      JsonToken value = p.nextToken();
      switch (name) {
        case "start" -> start = offset(p, value, number, name);
        case "end" -> end = offset(p, value, number, name);
        case "kind" -> kind = value == JsonToken.VALUE_NULL ? null : p.getValueAsString();
        default -> p.skipChildren();
      }
    }
    if (start == null || end == null) {
      throw new IOException("passage number " + number + ": a mention lacks its start or end");
    }
    int code = kind == null ? -1 : kindCodes.computeIfAbsent(kind, k -> {
      kindNames.add(k);
      return kindNames.size() - 1;
    });
    if (seen.add(new Key(start, end, code))) { // (start, end, kind) seen before in this passage: kept once
      starts.add(start);
      ends.add(end);
      kinds.add(code);
    }
  }

  /** A mention's identity within its passage. */
  private record Key(int start, int end, int kind) {}

  private static int offset(JsonParser p, JsonToken value, int number, String name) throws IOException {
    if (value != JsonToken.VALUE_NUMBER_INT) {
      throw new IOException("passage number " + number + ": a mention's " + name + " is not an integer");
    }
    return p.getIntValue();
  }

  /** A growable int array. */
  private static final class Ints {
    int[] data = new int[1024];
    int size;

    void add(int v) {
      if (size == data.length) {
        data = java.util.Arrays.copyOf(data, size * 2);
      }
      data[size++] = v;
    }

    int[] toArray() {
      return java.util.Arrays.copyOf(data, size);
    }
  }
}
