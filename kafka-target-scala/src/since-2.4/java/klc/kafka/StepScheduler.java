package klc.kafka;

import scala.Function0;
import scala.runtime.BoxedUnit;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** Kafka 2.4–3.0's {@code kafka.utils.Scheduler} trait (schedule answers a ScheduledFuture), run
 *  step by step ({@link StepTasks}); a period below one is a one-shot task there. */
final class StepScheduler extends StepTasks implements kafka.utils.Scheduler {
    StepScheduler(StepClock clock) {
        super(clock);
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Function0<BoxedUnit> task, long delay, long period, TimeUnit unit) {
        return submit(name, task::apply, unit.toMillis(delay), unit.toMillis(period));
    }
}
