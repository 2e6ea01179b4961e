package io.github.gatlingexecutor.benchmarks.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A titled result table, plus the series to chart (bar per row label). Rendered as text and as HTML. */
public final class Table {
    public final String title;
    public final String description;
    public final List<String> headers;
    public final List<List<String>> rows = new ArrayList<>();
    public final List<String> notes = new ArrayList<>();
    /** Chart: metric name to (label to value); rows with no value (failed, n/a) are left out. */
    public final Map<String, Map<String, Double>> series = new LinkedHashMap<>();
    public String chartUnit = "";
    public boolean lowerIsBetter = true;

    public Table(String title, String description, List<String> headers) {
        this.title = title;
        this.description = description;
        this.headers = headers;
    }

    public void row(List<String> cells) {
        rows.add(cells);
    }

    public void chart(String metric, String label, double value) {
        if (Double.isFinite(value)) {
            series.computeIfAbsent(metric, m -> new LinkedHashMap<>()).put(label, value);
        }
    }

    public String toText() {
        int[] widths = new int[headers.size()];
        for (int i = 0; i < headers.size(); i++) {
            widths[i] = headers.get(i).length();
        }
        for (List<String> r : rows) {
            for (int i = 0; i < r.size() && i < widths.length; i++) {
                widths[i] = Math.max(widths[i], r.get(i).length());
            }
        }
        StringBuilder sb = new StringBuilder();
        sb.append('\n').append(title).append('\n');
        line(sb, headers, widths);
        StringBuilder rule = new StringBuilder();
        for (int w : widths) {
            rule.append("-".repeat(w)).append("  ");
        }
        sb.append(rule.toString().stripTrailing()).append('\n');
        for (List<String> r : rows) {
            line(sb, r, widths);
        }
        for (String n : notes) {
            sb.append("  * ").append(n).append('\n');
        }
        return sb.toString();
    }

    /** The table as GitHub Markdown, for docs. */
    public String toMarkdown() {
        StringBuilder sb = new StringBuilder();
        sb.append("| ").append(String.join(" | ", headers)).append(" |\n|");
        for (int i = 0; i < headers.size(); i++) {
            sb.append(i == 0 ? " --- |" : " ---: |");
        }
        sb.append('\n');
        for (List<String> r : rows) {
            sb.append("| ").append(String.join(" | ", r)).append(" |\n");
        }
        for (String n : notes) {
            sb.append("\n* ").append(n);
        }
        if (!notes.isEmpty()) {
            sb.append('\n');
        }
        return sb.toString();
    }

    private static void line(StringBuilder sb, List<String> cells, int[] widths) {
        StringBuilder l = new StringBuilder();
        for (int i = 0; i < widths.length; i++) {
            String c = i < cells.size() ? cells.get(i) : "";
            if (i == 0) {
                l.append(c).append(" ".repeat(widths[i] - c.length()));
            } else {
                l.append(" ".repeat(widths[i] - c.length())).append(c);
            }
            l.append("  ");
        }
        sb.append(l.toString().stripTrailing()).append('\n');
    }

    public static String num(double v) {
        if (!Double.isFinite(v)) {
            return "-";
        }
        double a = Math.abs(v);
        if (a >= 100) {
            return String.format(Locale.ROOT, "%,.0f", v);
        }
        if (a >= 10) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
