package io.github.gatlingexecutor.benchmarks.scenarios;

import java.util.SplittableRandom;

/** Pre-computed key sequences, so the random number generator is never inside the timed loop. */
public final class Keys {
    private Keys() {
    }

    /** The seed's order: context 0..n-1, then again, {@code rounds} times. */
    public static int[] roundRobin(int keys, int rounds) {
        int[] out = new int[keys * rounds];
        for (int r = 0, i = 0; r < rounds; r++) {
            for (int k = 0; k < keys; k++) {
                out[i++] = k;
            }
        }
        return out;
    }

    public static int[] uniform(int keys, int count, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = random.nextInt(keys);
        }
        return out;
    }

    /** Zipf with exponent {@code s}: key k (0-based) has weight 1/(k+1)^s. Inverse-CDF sampling. */
    public static int[] zipf(int keys, double s, int count, long seed) {
        double[] cdf = new double[keys];
        double sum = 0;
        for (int k = 0; k < keys; k++) {
            sum += 1 / Math.pow(k + 1, s);
            cdf[k] = sum;
        }
        SplittableRandom random = new SplittableRandom(seed);
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            double u = random.nextDouble() * sum;
            int lo = 0;
            int hi = keys - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (cdf[mid] < u) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out[i] = lo;
        }
        return out;
    }

    public static int[] single(int key, int count) {
        int[] out = new int[count];
        java.util.Arrays.fill(out, key);
        return out;
    }
}
