package io.hybrid.lucene;

import java.io.IOException;
import java.util.Map;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.BytesRef;

/** A small in-memory index laid out like Anserini's: id as stored string + binary doc values, text fields with
 *  positions, norms and term vectors. */
final class TestIndex {
  static final Analyzer ANALYZER = new StandardAnalyzer(CharArraySet.EMPTY_SET);
  private static final FieldType TEXT = textType();

  private static FieldType textType() {
    FieldType t = new FieldType(TextField.TYPE_NOT_STORED);
    t.setStoreTermVectors(true);
    t.setStoreTermVectorPositions(true);
    t.freeze();
    return t;
  }

  private TestIndex() {}

  /** docs: id -> field -> text. Docs are added in the given (insertion) order, into one segment. */
  static DirectoryReader build(Map<String, Map<String, String>> docs) throws IOException {
    return build(docs, 0);
  }

  /** As {@link #build(Map)}, but with a new segment every {@code segmentSize} docs (0: one segment). */
  static DirectoryReader build(Map<String, Map<String, String>> docs, int segmentSize) throws IOException {
    ByteBuffersDirectory dir = new ByteBuffersDirectory();
    IndexWriterConfig config = new IndexWriterConfig(ANALYZER);
    config.setMergePolicy(org.apache.lucene.index.NoMergePolicy.INSTANCE);
    int added = 0;
    try (IndexWriter writer = new IndexWriter(dir, config)) {
      for (Map.Entry<String, Map<String, String>> d : docs.entrySet()) {
        Document doc = new Document();
        doc.add(new StringField("id", d.getKey(), Field.Store.YES));
        doc.add(new BinaryDocValuesField("id", new BytesRef(d.getKey())));
        for (Map.Entry<String, String> f : d.getValue().entrySet()) {
          doc.add(new Field(f.getKey(), f.getValue(), TEXT));
        }
        writer.addDocument(doc);
        if (segmentSize > 0 && ++added % segmentSize == 0) {
          writer.commit();
        }
      }
      if (segmentSize == 0) {
        writer.forceMerge(1);
      }
    }
    return DirectoryReader.open(dir);
  }
}
