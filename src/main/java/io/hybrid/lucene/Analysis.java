package io.hybrid.lucene;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;

/**
 * Query text analysis inside Java.
 *
 * <p>The Python side hands over the very {@link Analyzer} object pyserini uses ({@code get_lucene_analyzer()}), so
 * terms come out exactly as the index stored them, and a batch of queries is analysed in the worker threads
 * instead of one JNI call per text. With a null analyzer, texts are already-analysed terms separated by
 * whitespace.
 */
final class Analysis {
  private Analysis() {}

  static List<String> tokens(Analyzer analyzer, String text) {
    List<String> out = new ArrayList<>();
    if (text == null || text.isBlank()) {
      return out;
    }
    if (analyzer == null) {
      for (String t : text.trim().split("\\s+")) {
        out.add(t);
      }
      return out;
    }
    try (TokenStream stream = analyzer.tokenStream("contents", text)) {
      CharTermAttribute term = stream.addAttribute(CharTermAttribute.class);
      stream.reset();
      while (stream.incrementToken()) {
        out.add(term.toString());
      }
      stream.end();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** Term -> count, in first-occurrence order (the order the Python query builder adds clauses in). */
  static Map<String, Integer> counts(List<String> tokens) {
    Map<String, Integer> out = new LinkedHashMap<>();
    for (String t : tokens) {
      out.merge(t, 1, Integer::sum);
    }
    return out;
  }

  /** Analyse each whitespace-separated raw token on its own (type/docref tokens) and concatenate. */
  static List<String> eachToken(Analyzer analyzer, String raw) {
    List<String> out = new ArrayList<>();
    if (raw == null || raw.isBlank()) {
      return out;
    }
    for (String token : raw.trim().split("\\s+")) {
      out.addAll(tokens(analyzer, token));
    }
    return out;
  }
}
