package io.github.gatlingexecutor.benchmarks.report;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A single self-contained HTML page: tables plus inline SVG bar charts. No scripts, no network. */
public final class HtmlReport {
    private static final String GATLING = "GatlingExecutor";

    private HtmlReport() {
    }

    public static void write(Path file, String heading, List<String> header, Map<String, Double> atAGlance,
                             List<Table> tables, List<String> verdicts) throws IOException {
        StringBuilder sb = new StringBuilder();
        sb.append("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
                .append(esc(heading)).append("</title><style>")
                .append("body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}")
                .append("table{border-collapse:collapse;margin:.5em 0 1em}"
                        + "td,th{padding:3px 8px;border-bottom:1px solid #ddd}")
                .append("td{text-align:right}td:first-child,th:first-child{text-align:left}")
                .append("tr.g td{font-weight:bold;background:#fff4e0}.note{color:#555;font-size:90%}")
                .append("h2{margin-top:1.8em;border-bottom:2px solid #eee}"
                        + "svg text{font-size:12px;font-family:sans-serif}")
                .append("</style></head><body><h1>").append(esc(heading)).append("</h1><ul>");
        for (String h : header) {
            sb.append("<li>").append(esc(h)).append("</li>");
        }
        sb.append("</ul>");
        if (!atAGlance.isEmpty()) {
            sb.append("<h2>At a glance</h2><p class=\"note\">GatlingExecutor against the best ordered peer of each"
                    + " scenario: throughput ratio (for the latency scenarios, the peer's p99 over GatlingExecutor's;"
                    + " for coalescing, updates per second). Right of the 1.0 line, GatlingExecutor is ahead. Bars are"
                    + " clipped at " + Table.num(RATIO_CLIP) + "x; the number is the real ratio.</p>")
                    .append(ratioChart(atAGlance));
        }
        if (!verdicts.isEmpty()) {
            sb.append("<h2>Targets</h2><ul>");
            for (String v : verdicts) {
                sb.append("<li>").append(esc(v)).append("</li>");
            }
            sb.append("</ul>");
        }
        for (Table t : tables) {
            sb.append("<h2>").append(esc(t.title)).append("</h2><p class=\"note\">").append(esc(t.description))
                    .append("</p><table><tr>");
            for (String h : t.headers) {
                sb.append("<th>").append(esc(h)).append("</th>");
            }
            sb.append("</tr>");
            for (List<String> r : t.rows) {
                sb.append(r.get(0).startsWith(GATLING) ? "<tr class=\"g\">" : "<tr>");
                for (String c : r) {
                    sb.append("<td>").append(esc(c)).append("</td>");
                }
                sb.append("</tr>");
            }
            sb.append("</table>");
            for (String n : t.notes) {
                sb.append("<p class=\"note\">* ").append(esc(n)).append("</p>");
            }
            for (Map.Entry<String, Map<String, Double>> s : t.series.entrySet()) {
                sb.append(barChart(s.getKey() + (t.chartUnit.isEmpty() ? "" : " (" + t.chartUnit + ")")
                        + (t.lowerIsBetter ? ", lower is better" : ", higher is better"), s.getValue()));
            }
        }
        sb.append("</body></html>\n");
        Files.createDirectories(file.toAbsolutePath().getParent());
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
    }

    /** Horizontal bars, one per label, scaled to the largest value. */
    static String barChart(String title, Map<String, Double> values) {
        int labelWidth = 300;
        int barWidth = 520;
        int rowHeight = 22;
        int height = 30 + values.size() * rowHeight;
        double max = values.values().stream().mapToDouble(Double::doubleValue).max().orElse(1);
        if (max <= 0) {
            max = 1;
        }
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " role=\"img\"><text x=\"0\" y=\"16\" font-weight=\"bold\">%s</text>",
                labelWidth + barWidth + 90, height, esc(title)));
        int y = 28;
        List<Map.Entry<String, Double>> entries = new ArrayList<>(values.entrySet());
        for (Map.Entry<String, Double> e : entries) {
            double w = Math.max(1, e.getValue() / max * barWidth);
            String colour = e.getKey().startsWith(GATLING) ? "#e8730c" : "#4a7ab7";
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
                    labelWidth - 6, y + 14, esc(e.getKey())));
            sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>",
                    labelWidth, y + 2, w, rowHeight - 6, colour));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%s</text>", labelWidth + w + 4, y + 14,
                    esc(Table.num(e.getValue()))));
            y += rowHeight;
        }
        return sb.append("</svg>\n").toString();
    }

    private static final double RATIO_CLIP = 3.0;

    /** One bar per scenario, from 0 to the ratio (clipped), with a vertical line at 1.0. */
    static String ratioChart(Map<String, Double> ratios) {
        int labelWidth = 360;
        int barWidth = 460;
        int rowHeight = 22;
        int height = 20 + ratios.size() * rowHeight + 16;
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " role=\"img\">", labelWidth + barWidth + 90, height));
        int y = 8;
        for (Map.Entry<String, Double> e : ratios.entrySet()) {
            double ratio = e.getValue();
            double w = Math.max(1, Math.min(ratio, RATIO_CLIP) / RATIO_CLIP * barWidth);
            String colour = ratio >= 1 ? "#2e8b57" : "#c0392b";
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
                    labelWidth - 6, y + 14, esc(e.getKey())));
            sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>",
                    labelWidth, y + 2, w, rowHeight - 6, colour));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\">%sx%s</text>", labelWidth + w + 4,
                    y + 14, esc(Table.num(ratio)), ratio > RATIO_CLIP ? " (clipped)" : ""));
            y += rowHeight;
        }
        double one = labelWidth + barWidth / RATIO_CLIP;
        sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"4\" x2=\"%.1f\" y2=\"%d\" stroke=\"#222\""
                + " stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1.0</text>", one,
                one, y + 2, one, y + 14));
        return sb.append("</svg>\n").toString();
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
