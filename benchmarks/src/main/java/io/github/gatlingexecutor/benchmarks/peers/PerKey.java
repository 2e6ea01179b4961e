package io.github.gatlingexecutor.benchmarks.peers;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * Lazily created per-key state, safe for many producers: an array slot for keys below the capacity (what an
 * application with a known key space would do), a map above it. A lost creation race discards the loser through
 * {@code onDiscard}, so no peer leaks a thread.
 */
final class PerKey<T> {
    private final AtomicReferenceArray<T> slots;
    private final ConcurrentHashMap<Integer, T> overflow = new ConcurrentHashMap<>();
    private final IntFunction<T> factory;
    private final java.util.function.Consumer<T> onDiscard;

    PerKey(int capacity, IntFunction<T> factory, java.util.function.Consumer<T> onDiscard) {
        this.slots = new AtomicReferenceArray<>(capacity);
        this.factory = factory;
        this.onDiscard = onDiscard;
    }

    T get(int key) {
        if (key < slots.length()) {
            T t = slots.get(key);
            if (t != null) {
                return t;
            }
            T made = factory.apply(key);
            if (slots.compareAndSet(key, null, made)) {
                return made;
            }
            onDiscard.accept(made);
            return slots.get(key);
        }
        return overflow.computeIfAbsent(key, factory::apply);
    }

    void forEach(java.util.function.Consumer<T> action) {
        for (int i = 0; i < slots.length(); i++) {
            T t = slots.get(i);
            if (t != null) {
                action.accept(t);
            }
        }
        overflow.values().forEach(action);
    }
}
