package io.hybrid.lucene;

import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.ConstantScoreQuery;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;

/**
 * A lossless text form of the Lucene queries the retrievers build, so a query built in one JVM (the driver) can be
 * searched in another (a shard worker process or machine) without rebuilding it from Python-side logic.
 *
 * <p>Why not {@code Query.toString()}: it is not parseable back in general (analysis, escaping, boosts printed
 * rounded). This form carries terms verbatim (length-prefixed, no escaping) and boosts as float bits, so the decoded
 * query scores bit for bit like the original.
 *
 * <p>Grammar: {@code T<str field><str text>} term, {@code B<hex float bits>;<query>} boost, {@code
 * Q<minShouldMatch>;<n>;} then n times an occur letter (S should, M must, F filter, N must not) and a query,
 * {@code C<query>} constant score, {@code A} match all; {@code <str>} is {@code <length>:<chars>}.
 */
public final class QueryCodec {
  private QueryCodec() {}

  public static String encode(Query query) {
    StringBuilder out = new StringBuilder();
    write(query, out);
    return out.toString();
  }

  public static String[] encodeAll(Query[] queries) {
    String[] out = new String[queries.length];
    for (int i = 0; i < queries.length; i++) {
      out[i] = encode(queries[i]);
    }
    return out;
  }

  public static Query decode(String text) {
    int[] at = {0};
    Query query = read(text, at);
    if (at[0] != text.length()) {
      throw new IllegalArgumentException("trailing characters after query at offset " + at[0]);
    }
    return query;
  }

  public static Query[] decodeAll(String[] texts) {
    Query[] out = new Query[texts.length];
    for (int i = 0; i < texts.length; i++) {
      out[i] = decode(texts[i]);
    }
    return out;
  }

  private static void write(Query query, StringBuilder out) {
    if (query instanceof TermQuery) {
      Term term = ((TermQuery) query).getTerm();
      out.append('T');
      string(term.field(), out);
      string(term.text(), out);
    } else if (query instanceof BoostQuery) {
      BoostQuery boost = (BoostQuery) query;
      out.append('B').append(Integer.toHexString(Float.floatToIntBits(boost.getBoost()))).append(';');
      write(boost.getQuery(), out);
    } else if (query instanceof BooleanQuery) {
      BooleanQuery bool = (BooleanQuery) query;
      out.append('Q').append(bool.getMinimumNumberShouldMatch()).append(';');
      out.append(bool.clauses().size()).append(';');
      for (BooleanClause clause : bool.clauses()) {
        out.append(occur(clause.getOccur()));
        write(clause.getQuery(), out);
      }
    } else if (query instanceof ConstantScoreQuery) {
      out.append('C');
      write(((ConstantScoreQuery) query).getQuery(), out);
    } else if (query instanceof MatchAllDocsQuery) {
      out.append('A');
    } else {
      throw new IllegalArgumentException(
          "cannot ship a " + query.getClass().getSimpleName() + " to a remote shard (QueryCodec)");
    }
  }

  private static char occur(BooleanClause.Occur occur) {
    switch (occur) {
      case SHOULD:
        return 'S';
      case MUST:
        return 'M';
      case FILTER:
        return 'F';
      case MUST_NOT:
        return 'N';
      default:
        throw new IllegalArgumentException("unknown occur " + occur);
    }
  }

  private static BooleanClause.Occur occur(char letter) {
    switch (letter) {
      case 'S':
        return BooleanClause.Occur.SHOULD;
      case 'M':
        return BooleanClause.Occur.MUST;
      case 'F':
        return BooleanClause.Occur.FILTER;
      case 'N':
        return BooleanClause.Occur.MUST_NOT;
      default:
        throw new IllegalArgumentException("unknown occur letter " + letter);
    }
  }

  private static void string(String value, StringBuilder out) {
    out.append(value.length()).append(':').append(value);
  }

  private static Query read(String text, int[] at) {
    if (at[0] >= text.length()) {
      throw new IllegalArgumentException("query text ends early");
    }
    char tag = text.charAt(at[0]++);
    switch (tag) {
      case 'T':
        {
          String field = readString(text, at);
          return new TermQuery(new Term(field, readString(text, at)));
        }
      case 'B':
        {
          float boost = Float.intBitsToFloat(Integer.parseUnsignedInt(readUntil(text, at, ';'), 16));
          return new BoostQuery(read(text, at), boost);
        }
      case 'Q':
        {
          int minShouldMatch = Integer.parseInt(readUntil(text, at, ';'));
          int n = Integer.parseInt(readUntil(text, at, ';'));
          BooleanQuery.Builder builder = new BooleanQuery.Builder();
          builder.setMinimumNumberShouldMatch(minShouldMatch);
          for (int i = 0; i < n; i++) {
            BooleanClause.Occur occur = occur(text.charAt(at[0]++));
            builder.add(read(text, at), occur);
          }
          return builder.build();
        }
      case 'C':
        return new ConstantScoreQuery(read(text, at));
      case 'A':
        return new MatchAllDocsQuery();
      default:
        throw new IllegalArgumentException("unknown query tag '" + tag + "' at offset " + (at[0] - 1));
    }
  }

  private static String readUntil(String text, int[] at, char end) {
    int stop = text.indexOf(end, at[0]);
    if (stop < 0) {
      throw new IllegalArgumentException("missing '" + end + "' after offset " + at[0]);
    }
    String out = text.substring(at[0], stop);
    at[0] = stop + 1;
    return out;
  }

  private static String readString(String text, int[] at) {
    int length = Integer.parseInt(readUntil(text, at, ':'));
    String out = text.substring(at[0], at[0] + length);
    at[0] += length;
    return out;
  }
}
