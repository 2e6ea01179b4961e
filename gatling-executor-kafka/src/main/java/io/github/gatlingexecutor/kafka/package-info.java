/**
 * Kafka on GatlingExecutor: {@link io.github.gatlingexecutor.kafka.KafkaProcessor} polls on one thread and runs
 * records on executor lanes, in per-key order ({@link io.github.gatlingexecutor.kafka.Ordering}), committing only
 * offsets behind completed work.
 */
package io.github.gatlingexecutor.kafka;
