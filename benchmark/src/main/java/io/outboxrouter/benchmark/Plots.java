package io.outboxrouter.benchmark;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import javax.imageio.ImageIO;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/** One PNG: throughput per contender (left) and latency percentiles per contender and rate (right). */
final class Plots {
    static void write(Results r, Path png, String machine) throws IOException {
        var throughput = new CategoryChartBuilder().width(900).height(520).title("Backlog drain, events/s (" + machine + ")")
                .yAxisTitle("events/s").build();
        style(throughput);
        var contenders = new LinkedHashSet<String>();
        var medians = r.medians().stream().map(Results.Median::median).toList();
        medians.forEach(t -> contenders.add(t.database() + ": " + t.contender()));
        for (int size : contenders.isEmpty() ? new int[0] : new int[] {1, 100}) { // a latency-only run has no bars
            var x = new ArrayList<String>();
            var y = new ArrayList<Double>();
            for (String c : contenders) {
                x.add(c);
                y.add(medians.stream().filter(t -> t.txnSize() == size && c.equals(t.database() + ": " + t.contender()))
                        .mapToDouble(Results.Throughput::eventsPerSecond).findFirst().orElse(0));
            }
            throughput.addSeries(size + "-row transactions", x, y);
        }

        var latency = new CategoryChartBuilder().width(900).height(520).title("Commit to Kafka consumer")
                .yAxisTitle("ms (log scale)").build();
        style(latency);
        latency.getStyler().setYAxisLogarithmic(true);
        // Bars start at zero, which a log axis cannot show: points instead.
        latency.getStyler().setDefaultSeriesRenderStyle(org.knowm.xchart.CategorySeries.CategorySeriesRenderStyle.Scatter);
        latency.getStyler().setMarkerSize(10);
        var x = new ArrayList<String>();
        var p50 = new ArrayList<Double>();
        var p99 = new ArrayList<Double>();
        for (var l : r.latency) {
            x.add(l.database() + ": " + l.contender() + " @ " + l.targetRate() + "/s" + (l.rowsPerTxn() > 1 ? " in " + l.rowsPerTxn() + "-row txns" : ""));
            p50.add(Double.isNaN(l.p50()) ? 0.1 : Math.max(0.1, l.p50()));
            p99.add(Double.isNaN(l.p99()) ? 0.1 : Math.max(0.1, l.p99()));
        }
        if (!x.isEmpty()) {
            latency.addSeries("p50", x, p50);
            latency.addSeries("p99", x, p99);
        }
        List<BufferedImage> images = new ArrayList<>();
        if (!contenders.isEmpty()) {
            images.add(BitmapEncoder.getBufferedImage(throughput));
        }
        if (contenders.isEmpty() && x.isEmpty()) {
            return;
        }
        if (!x.isEmpty()) {
            images.add(BitmapEncoder.getBufferedImage(latency));
        }
        int w = images.stream().mapToInt(BufferedImage::getWidth).sum();
        int h = images.stream().mapToInt(BufferedImage::getHeight).max().orElse(1);
        var out = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        var g = out.createGraphics();
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, w, h);
        int at = 0;
        for (var img : images) {
            g.drawImage(img, at, 0, null);
            at += img.getWidth();
        }
        g.dispose();
        ImageIO.write(out, "png", png.toFile());
    }

    private static void style(CategoryChart c) {
        c.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        c.getStyler().setXAxisLabelRotation(35);
        c.getStyler().setChartBackgroundColor(Color.WHITE);
        c.getStyler().setPlotGridVerticalLinesVisible(false);
        c.getStyler().setAvailableSpaceFill(0.7);
    }

    private Plots() {
    }
}
