/** Why a trial failed: the trial's ``error`` (the master stores it as the process fails:
 * ``engine.trial_error``) and what followed from its restart count and the experiment's
 * ``max_restarts`` (``exitLine``), else, for a trial from before it, read from the end of
 * its log. */

/** A trial process's working directory (``<root>/exp<E>-trial<T>-pid<P>[-of<O>]``, a copy
 * of the model directory removed when the process exits, on the agent's machine), with
 * the separator after it when a path inside it goes on. A process reads ``<pid>``, or
 * ``<pid>.<start>.<namespace>`` in hex where ``/proc`` was readable (``common/scratch.py``). */
const WORKDIR = /(?:[A-Za-z]:)?[\\/](?:[^\s"'`()<>\\/]+[\\/])*exp\d+-trial\d+-pid\d+(?:\.[0-9a-f]+\.[0-9a-f]+)?(?:-of\d+(?:\.[0-9a-f]+\.[0-9a-f]+)?)?(?![\w-])([\\/])?/g;

/** ``text`` with paths in a trial's working directory made relative to the model directory
 * (whose files it copied): ``File "/tmp/det-workdirs/exp1-trial2-pid9/model_def.py"`` reads
 * ``File "model_def.py"``; the directory itself reads "the model directory". (Local runs
 * map them to the model directory's own path: ``harness._trial_setup.user_paths``.) */
export function modelDirPaths(text: string): string {
  return text.replace(WORKDIR, (_whole, sep: string | undefined) => (sep ? "" : "the model directory"));
}

export interface FailureSummary {
  /** What went wrong in the trial's process: the harness's "trial N failed: ..." line, else
   * the last line of the last Python traceback. */
  cause: string | null;
  /** The master's line on the process's end: "Trial failed (exit code 1); no restarts left …". */
  exit: string | null;
}

const EXIT = /^\[determined\] (Trial failed.*)$/;
const HARNESS = /^trial \d+ failed: (.+)$/;
const TRACEBACK = /^Traceback \(most recent call last\):/;
const EXCEPTION = /^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(:.*)?$/;

/** A traceback's frame line (exception groups draw "|" and "+" before theirs). */
const FRAME = /^[ |+-]*File "/;

/** A trial's log text as the log view shows it: of its lines, those the failure box reads
 * (a traceback's frame and exception lines, the harness's "trial N failed: ...", also
 * after a rank's "[rank=N] ") with
 * ``modelDirPaths``'s paths, so that both read alike; every other line as written (a line
 * saying where the trial runs names where it runs). The master's log search reads lines the
 * same way (``master/api/_log_view.py``): keep both alike. */
export function logLinePaths(text: string): string {
  return text.split("\n").map((line) => {
    const bare = line.replace(/^\[rank=\d+\] /, "").replace(/\s+$/, "");
    return FRAME.test(bare) || EXCEPTION.test(bare) || HARNESS.test(bare) ? modelDirPaths(line) : line;
  }).join("\n");
}

/** The newest failure in ``lines`` (oldest first): its exit line and, before it (after the
 * failure before), its cause. Nulls when the lines hold none. Given ``knownCause`` (the
 * trial's error's: ``trialError``), that is the cause, and the exit line leaves it out. */
export function failureSummary(lines: string[], knownCause: string | null = null): FailureSummary {
  const text = lines.map((l) => l.replace(/\s+$/, ""));
  let end = text.length;
  let exit: string | null = null;
  for (let i = text.length - 1; i >= 0; i--) {
    const m = EXIT.exec(text[i]);
    if (m) {
      exit = m[1];
      end = i;
      break;
    }
  }
  let start = 0; // the failure before this one (a restart) bounds where its cause is
  for (let i = end - 1; i >= 0; i--) if (EXIT.test(text[i])) { start = i + 1; break; }
  let cause: string | null = null;
  for (let i = end - 1; i >= start && cause == null; i--) {
    const m = HARNESS.exec(text[i]);
    if (m) cause = m[1];
  }
  if (cause == null) {
    let traceback = -1;
    for (let i = end - 1; i >= start; i--) if (TRACEBACK.test(text[i])) { traceback = i; break; }
    if (traceback >= 0) {
      for (let i = traceback + 1; i < end; i++) {
        if (EXCEPTION.test(text[i])) cause = text[i]; // the last such line of the traceback
        else if (cause != null && !/^\s/.test(text[i])) break;
      }
    }
  }
  const shownCause = knownCause ?? (cause && modelDirPaths(cause));
  const shownExit = exit && modelDirPaths(exit);
  return { cause: shownCause, exit: shownExit && shownCause ? withoutCause(shownExit, shownCause) : shownExit };
}

/** The master's exit line names its reason ("Trial failed (exit code 65): trial 3 failed:
 * CAUSE; no restarts left …", the reason cut with "…" when long); where that reason is the
 * cause shown above it, the line keeps only the rest ("Trial failed (exit code 65); no
 * restarts left …"). */
function withoutCause(exit: string, cause: string): string {
  const m = /^(Trial failed \([^)]*\)): (.*)$/.exec(exit);
  if (!m) return exit;
  for (let at = m[2].indexOf("; "); at >= 0; at = m[2].indexOf("; ", at + 1)) {
    const reason = m[2].slice(0, at).replace(/^trial \d+ failed: /, "");
    const whole = reason.endsWith("…") ? cause.startsWith(reason.slice(0, -1)) : reason.includes(cause);
    if (reason && whole) return m[1] + m[2].slice(at);
  }
  return exit;
}

/** A trial's stored error as the failure box shows it. */
export interface TrialError {
  /** The line that says why ("ValueError: no rows in train.csv"): the harness's "trial N
   * failed: ..." line, else a traceback's last exception line, else the last line of the
   * process's output; null when the error names only how the process ended. */
  cause: string | null;
  /** How the process ended: the error's head, "Trial failed (exit code 1)". */
  head: string;
  /** What the process wrote, whole (a traceback, its last lines), below its head; null
   * when that is one line (the cause). */
  detail: string | null;
}

const ERROR_HEAD = /^(Trial failed \([^)]*\))(?:: ?(.*))?$/;
/** The master's line before a process's last lines (``master/experiments/_failure.py``). */
const LAST_OUTPUT = /^its last output:$/;

/** ``error`` (a trial's ``error``: "Trial failed (exit code 1): Traceback ...\n...") read
 * for the failure box: its cause, its head, and the output it quotes. */
export function trialError(error: string): TrialError {
  const lines = error.replace(/\s+$/, "").split("\n").map((l) => modelDirPaths(l.replace(/\s+$/, "")));
  const m = ERROR_HEAD.exec(lines[0]);
  const head = m ? m[1] : "Trial failed";
  const body = m ? [...(m[2] ? [m[2]] : []), ...lines.slice(1)] : lines;
  const bare = body.map((l) => l.replace(/^\[rank=\d+\] /, ""));  // a rank's lines, unprefixed
  let cause: string | null = null;
  for (let i = bare.length - 1; i >= 0 && cause == null; i--) {
    const h = HARNESS.exec(bare[i]);
    if (h) cause = h[1];
  }
  let traceback = -1;
  for (let i = bare.length - 1; i >= 0 && traceback < 0; i--) if (TRACEBACK.test(bare[i])) traceback = i;
  if (cause == null && traceback >= 0) {
    for (let i = traceback + 1; i < bare.length; i++) {
      if (EXCEPTION.test(bare[i])) cause = bare[i];
      else if (cause != null && !/^\s/.test(bare[i])) break;
    }
  }
  if (cause == null) {
    const last = [...body].reverse().find((l) => l.trim() && l !== "…" && !LAST_OUTPUT.test(l) && !/^its rank \d+ failed first:$/.test(l));
    cause = last?.trim() ?? null;
  }
  // The lines quoted, without the lead "its last output:" (the box's summary says it); one
  // line is the cause, or says no more.
  const quoted = body.length && LAST_OUTPUT.test(body[0]) ? body.slice(1) : body;
  const detail = quoted.filter((l) => l.trim()).length > 1 ? quoted.join("\n") : null;
  return { cause, head, detail };
}

/** How an ERROR trial's last process ended and why it was not restarted, from stored data:
 * the error's ``head``, the trial's ``restarts`` and the experiment config's
 * ``max_restarts``, worded as the master's log line (``engine._core._failed``): "Trial
 * failed (exit code 1); no restarts left (1 of 1 restarts used)", or "experiment stopping"
 * where restarts were left (it was being killed or stopped). Just ``head`` for another
 * state, or when ``maxRestarts`` is unknown. */
export function exitLine(head: string, state: string, restarts: number, maxRestarts: number | null | undefined): string {
  if (state !== "ERROR" || maxRestarts == null) return head;
  const why = restarts >= maxRestarts ? "no restarts left" : "experiment stopping";
  return `${head}; ${why} (${restarts} of ${maxRestarts} restarts used)`;
}
