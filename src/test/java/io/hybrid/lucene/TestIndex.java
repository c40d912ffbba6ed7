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

  /** docs: id -> field -> text. Docs are added in the given (insertion) order. */
  static DirectoryReader build(Map<String, Map<String, String>> docs) throws IOException {
    ByteBuffersDirectory dir = new ByteBuffersDirectory();
    try (IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig(ANALYZER))) {
      for (Map.Entry<String, Map<String, String>> d : docs.entrySet()) {
        Document doc = new Document();
        doc.add(new StringField("id", d.getKey(), Field.Store.YES));
        doc.add(new BinaryDocValuesField("id", new BytesRef(d.getKey())));
        for (Map.Entry<String, String> f : d.getValue().entrySet()) {
          doc.add(new Field(f.getKey(), f.getValue(), TEXT));
        }
        writer.addDocument(doc);
      }
      writer.forceMerge(1);
    }
    return DirectoryReader.open(dir);
  }
}
