"""``klc mutate-kafka``: PIT mutants of Kafka's own log classes, judged by Kafka's own unit tests
(its published test jars) and by this suite, side by side (docs/kafka-mutation.md)."""
