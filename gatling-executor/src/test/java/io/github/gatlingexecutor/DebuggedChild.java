package io.github.gatlingexecutor;

import static org.junit.jupiter.api.Assertions.fail;

import com.sun.jdi.Bootstrap;
import com.sun.jdi.IncompatibleThreadStateException;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VMDisconnectedException;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.connect.LaunchingConnector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.VMDeathEvent;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A main class run in a JVM of its own under the platform's debugger interface (JDI), with breakpoints in the
 * executor's code: for a window of a few instructions that no caller's code reaches (no context's {@code hashCode},
 * no thread factory, no task), where only a debugger can hold a thread. A breakpoint suspends only the thread that
 * meets it; the test says, per hit, whether that thread goes on at once or stays held, and a hit may let held threads
 * go. Nothing is added to the executor's code: a breakpoint is placed at a method's first instruction, or at the line
 * of the executor's source that holds a given text (found in the source, so a moved line is still found, and a text
 * no longer there fails the test rather than placing the breakpoint elsewhere).
 */
final class DebuggedChild {

    /** Where to stop: a method's entry ({@code lineText} null), or the line of its class's source holding a text. */
    static final class Spot {
        final String name;
        final String className;
        final String method;
        final String lineText;

        private Spot(String name, String className, String method, String lineText) {
            this.name = name;
            this.className = className;
            this.method = method;
            this.lineText = lineText;
        }

        static Spot entry(String name, Class<?> type, String method) {
            return new Spot(name, type.getName(), method, null);
        }

        static Spot line(String name, Class<?> type, String lineText) {
            return new Spot(name, type.getName(), null, lineText);
        }
    }

    /** What to do when a thread meets a spot. */
    interface Hit {
        /** {@code held}: the threads kept suspended so far. Returns whether {@code thread} goes on at once. */
        boolean hit(String spot, ThreadReference thread, List<ThreadReference> held);
    }

    /**
     * Runs {@code main} to its end with the breakpoints of {@code spots}; returns its output (errors included) once it
     * has exited with status 0 within 30 s, and fails the test otherwise (a child still running then is destroyed).
     * A child ends with {@code System.exit}, which ends the threads still held too.
     */
    static String run(Class<?> main, List<Spot> spots, Hit onHit) throws Exception {
        return run(main, "", spots, onHit);
    }

    /** {@link #run(Class, List, Hit)} with {@code args} (separated by spaces) for the child's {@code main}. */
    static String run(Class<?> main, String args, List<Spot> spots, Hit onHit) throws Exception {
        LaunchingConnector launcher = Bootstrap.virtualMachineManager().defaultConnector();
        Map<String, Connector.Argument> arguments = launcher.defaultArguments();
        arguments.get("main").setValue(args.isEmpty() ? main.getName() : main.getName() + " " + args);
        arguments.get("options").setValue("-cp \"" + System.getProperty("java.class.path") + "\"");
        VirtualMachine vm = launcher.launch(arguments); // suspended before its main class loads
        StringBuffer out = new StringBuffer();
        Thread stdout = drain(vm.process().getInputStream(), out);
        Thread stderr = drain(vm.process().getErrorStream(), out);
        List<ThreadReference> held = new ArrayList<>();
        boolean ended = false;
        try {
            for (Spot spot : spots) {
                ClassPrepareRequest prepare = vm.eventRequestManager().createClassPrepareRequest();
                prepare.addClassFilter(spot.className);
                prepare.putProperty("spot", spot);
                prepare.enable();
            }
            vm.resume();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!ended && System.nanoTime() - deadline < 0) {
                EventSet events = vm.eventQueue().remove(100);
                if (events == null) {
                    continue;
                }
                boolean resume = true;
                for (Event event : events) {
                    if (event instanceof ClassPrepareEvent) {
                        Spot spot = (Spot) event.request().getProperty("spot");
                        BreakpointRequest bp = vm.eventRequestManager()
                                .createBreakpointRequest(locate(((ClassPrepareEvent) event).referenceType(), spot));
                        bp.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
                        bp.putProperty("spot", spot);
                        bp.enable();
                    } else if (event instanceof BreakpointEvent) {
                        ThreadReference thread = ((BreakpointEvent) event).thread();
                        Spot spot = (Spot) event.request().getProperty("spot");
                        if (!onHit.hit(spot.name, thread, held)) {
                            held.add(thread);
                            resume = false;
                        }
                    } else if (event instanceof VMDeathEvent || event instanceof VMDisconnectEvent) {
                        ended = true;
                    }
                }
                if (resume) {
                    try {
                        events.resume();
                    } catch (VMDisconnectedException gone) {
                        ended = true;
                    }
                }
            }
            if (!ended) {
                fail("the debugged child did not end within 30 s (held: " + held + "):\n" + out + "\nits threads:\n"
                        + threads(vm));
            }
        } finally {
            if (!ended) {
                vm.process().destroyForcibly();
            }
        }
        vm.process().waitFor(10, TimeUnit.SECONDS);
        stdout.join(5_000);
        stderr.join(5_000);
        if (vm.process().exitValue() != 0) {
            fail("the debugged child exited with " + vm.process().exitValue() + ":\n" + out);
        }
        return out.toString();
    }

    /**
     * Every thread of a child that did not end, each with its state and stack: the child is suspended first, so that
     * the frames can be read. A hang then says where each thread waited, which the child's output cannot.
     */
    private static String threads(VirtualMachine vm) {
        StringBuilder dump = new StringBuilder();
        try {
            vm.suspend();
            for (ThreadReference t : vm.allThreads()) {
                dump.append('"').append(t.name()).append("\" ").append(state(t.status()))
                        .append(t.isAtBreakpoint() ? ", at a breakpoint" : "").append('\n');
                for (StackFrame frame : t.frames()) {
                    Location at = frame.location();
                    dump.append("    at ").append(at.declaringType().name()).append('.').append(at.method().name())
                            .append(':').append(at.lineNumber()).append('\n');
                }
            }
        } catch (IncompatibleThreadStateException | RuntimeException unreadable) {
            dump.append("(not read: ").append(unreadable).append(")\n");
        }
        return dump.toString();
    }

    private static String state(int status) {
        switch (status) {
            case ThreadReference.THREAD_STATUS_RUNNING:
                return "running";
            case ThreadReference.THREAD_STATUS_SLEEPING:
                return "sleeping";
            case ThreadReference.THREAD_STATUS_MONITOR:
                return "blocked on a monitor";
            case ThreadReference.THREAD_STATUS_WAIT:
                return "waiting";
            case ThreadReference.THREAD_STATUS_ZOMBIE:
                return "ended";
            case ThreadReference.THREAD_STATUS_NOT_STARTED:
                return "not started";
            default:
                return "state unknown";
        }
    }

    /**
     * A thread of the executor in the window a test holds open, and the child's main thread at the spot where it is
     * about to race it (with a shutdown, a submit): neither goes on before both are there, whichever the scheduler
     * brings first. Then the main thread goes on, and the one in the window stays held until the test lets it go.
     */
    static final class Meeting {
        private ThreadReference inWindow;
        private ThreadReference main;

        /** For a {@link Hit}: the executor's thread has reached the window. It stays; a main thread waiting goes on. */
        boolean windowReached(ThreadReference thread, List<ThreadReference> held) {
            inWindow = thread;
            if (main != null && held.remove(main)) {
                main.resume();
            }
            return false;
        }

        /** For a {@link Hit}: the main thread is ready. It goes on if the other is in the window, else it waits. */
        boolean mainReady(ThreadReference thread) {
            main = thread;
            return inWindow != null;
        }

        /** Whether the executor's thread has reached the window (a later hit of the same spot is another pass). */
        boolean reached() {
            return inWindow != null;
        }

        /** Lets the thread in the window go on, alone. */
        void releaseWindow(List<ThreadReference> held) {
            held.remove(inWindow);
            inWindow.resume();
        }
    }

    /** Lets every held thread go. */
    static void resumeAll(List<ThreadReference> held) {
        for (ThreadReference t : held) {
            t.resume();
        }
        held.clear();
    }

    private static Location locate(ReferenceType type, Spot spot) throws Exception {
        if (spot.lineText == null) {
            List<Method> methods = type.methodsByName(spot.method);
            if (methods.size() != 1) {
                throw new AssertionError(methods.size() + " methods named " + spot.method + " in " + type.name());
            }
            return methods.get(0).location();
        }
        String file = type.sourceName();
        Path source = Path.of("src", "main", "java").resolve(type.name().replace('.', '/')).resolveSibling(file);
        List<String> lines = Files.readAllLines(source, StandardCharsets.UTF_8);
        int found = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(spot.lineText)) {
                if (found >= 0) {
                    throw new AssertionError("two lines of " + source + " hold " + spot.lineText);
                }
                found = i + 1;
            }
        }
        if (found < 0) {
            throw new AssertionError("no line of " + source + " holds " + spot.lineText);
        }
        List<Location> at = type.locationsOfLine(found);
        if (at.isEmpty()) {
            throw new AssertionError("no code at line " + found + " of " + source);
        }
        return at.get(0);
    }

    private static Thread drain(InputStream in, StringBuffer out) {
        Thread reader = new Thread(() -> {
            byte[] buf = new byte[4096];
            try (in) {
                for (int n; (n = in.read(buf)) > 0; ) {
                    out.append(new String(buf, 0, n, StandardCharsets.UTF_8));
                }
            } catch (IOException closed) {
                // the child was destroyed: what was read stays
            }
        }, "debugged-child-output");
        reader.setDaemon(true);
        reader.start();
        return reader;
    }

    private DebuggedChild() {
    }
}
