package io.hybrid.lucene;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.MultiBits;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;

/**
 * A stored text field of every document of an index, read in one call and cut short on the Java side.
 *
 * <p>Why: a hybrid passage index stores each passage's whole JSON ({@code raw}), ~95% of it the detected
 * mentions, and the document vectors of the safety net read only the keys before them. Read document by
 * document through pyjnius, all of it crosses into Python (170 MB for ECB+'s 15,812 raw passages, ~0.5 s);
 * here each text is cut before the first match of a pattern and only the part before it crosses.
 */
public final class StoredText {
  private StoredText() {}

  /** Per live document with a non-empty field, in doc order: its number, its text and whether it was cut. */
  public static final class Prefixes {
    public final int[] docs;
    public final String[] texts;
    public final boolean[] cut;

    Prefixes(int[] docs, String[] texts, boolean[] cut) {
      this.docs = docs;
      this.texts = texts;
      this.cut = cut;
    }
  }

  /**
   * The stored {@code field} of every live document where it is non-empty, in doc order: the text before the
   * first match of {@code cut} (a regular expression), or the whole text when nothing matches.
   */
  public static Prefixes prefixes(String path, String field, String cut) throws IOException {
    Pattern pattern = Pattern.compile(cut);
    Set<String> only = Set.of(field);
    List<Integer> docs = new ArrayList<>();
    List<String> texts = new ArrayList<>();
    List<Boolean> cuts = new ArrayList<>();
    try (DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(path)))) {
      StoredFields stored = reader.storedFields();
      Bits live = MultiBits.getLiveDocs(reader);
      for (int n = 0; n < reader.maxDoc(); n++) {
        if (live != null && !live.get(n)) {
          continue;
        }
        String text = stored.document(n, only).get(field);
        if (text == null || text.isEmpty()) {
          continue;
        }
        Matcher found = pattern.matcher(text);
        boolean matched = found.find();
        docs.add(n);
        texts.add(matched ? text.substring(0, found.start()) : text);
        cuts.add(matched);
      }
    }
    int[] numbers = new int[docs.size()];
    boolean[] flags = new boolean[docs.size()];
    for (int i = 0; i < numbers.length; i++) {
      numbers[i] = docs.get(i);
      flags[i] = cuts.get(i);
    }
    return new Prefixes(numbers, texts.toArray(new String[0]), flags);
  }

  /** The whole stored {@code field} of documents {@code docs} (numbers from {@link #prefixes}). */
  public static String[] texts(String path, String field, int[] docs) throws IOException {
    Set<String> only = Set.of(field);
    String[] out = new String[docs.length];
    try (DirectoryReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(path)))) {
      StoredFields stored = reader.storedFields();
      for (int i = 0; i < docs.length; i++) {
        out[i] = stored.document(docs[i], only).get(field);
      }
    }
    return out;
  }
}
