package klc.kafka;

import scala.Function0;
import scala.runtime.BoxedUnit;

import java.util.concurrent.TimeUnit;

/** Kafka 1.1–2.3's {@code kafka.utils.Scheduler} trait (schedule answers nothing), run step by
 *  step ({@link StepTasks}); a period below one is a one-shot task there. */
final class StepScheduler extends StepTasks implements kafka.utils.Scheduler {
    StepScheduler(StepClock clock) {
        super(clock);
    }

    @Override
    public void schedule(String name, Function0<BoxedUnit> task, long delay, long period, TimeUnit unit) {
        submit(name, task::apply, unit.toMillis(delay), unit.toMillis(period));
    }
}
