package klc.kafka;

/** A step, or a scenario setting, this target cannot express: reported, never passed. */
final class Unsupported extends RuntimeException {
    Unsupported(String why) {
        super(why);
    }
}
