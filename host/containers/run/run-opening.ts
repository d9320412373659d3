import type { Logger } from '../../logging/logger.ts';
import type { CommandSetup, HostMethods, RunStartParams } from '../../../container-agent/src/protocol.ts';
import type { ProtocolProblem, RpcHandlers } from '../../../container-agent/src/rpc/peer.ts';
import type { RunDone } from '../../ipc/host-handlers.ts';
import type { ContainerProcess } from '../../ipc/container-process.ts';
import { createRunSession, toChatMessage, type RunSessionDeps } from '../../ipc/run-session.ts';
import type { RunIdentity } from '../../security/decisions.ts';
import type { RunCallbacks, RunContext, RunHandle, RunOutcome } from '../../router/agent-runner.ts';
import type { StoredMessage } from '../../store/messages-store.ts';
import { errorMessage } from '../../errors/error-message.ts';

export type StartParams = Omit<
  RunStartParams,
  'runId' | 'group' | 'messages' | 'gatewayKey' | 'commandSetup'
>;

/**
 * What every runner needs from the host, whatever runs the agent (a Docker container, a pod): the run's
 * gateway key, its start parameters, the host's handlers of its calls and what happens when it ends.
 */
export interface RunWiring {
  /** Read at each run: photos up to this size go to the model as images (0: the model sees none). */
  maxImageBytes?: () => number;
  gateway: {
    issueKey(owner: { runId: string; groupId: string }): {
      key: string;
      credentialKey: string;
      revoke(): void;
    };
    baseUrlFor(address: string): string;
    credentialsUrlFor(address: string): string;
  };
  /**
   * What the run's commands get to use the group's credentials through the host (the routes' URL at the
   * address the container reaches the host on, the run's credential key); read at each run.
   */
  commandSetup?(
    group: RunContext['group'],
    routesUrl: string,
    credentialKey: string,
  ): CommandSetup | undefined;
  /** A group as stored now; undefined once it was removed. */
  groupById(groupId: string): RunContext['group'] | undefined;
  /** The run.start params the agent gets, apart from runId, group, messages and the gateway key. */
  /** May wait (listing the group's MCP tools); the container is already starting meanwhile. */
  startParams(ctx: RunContext): StartParams | Promise<StartParams>;
  /** The container's environment, read at each run: a reloaded time zone reaches the next container. */
  env(): Record<string, string>;
  handlersFor(
    identity: RunIdentity,
    callbacks: RunCallbacks,
    onDone: (done: RunDone) => void,
    stopRun: (reason: string) => void,
  ): RpcHandlers<HostMethods>;
  onProtocolProblem(identity: RunIdentity, problem: ProtocolProblem): void;
  /** Called once when a run has ended, however it ended (to release what the host holds for it). */
  onRunEnded(runId: number): void;
  /** Applies what was noted during the run to its outcome (a denial or a 401 make a failure final). */
  settleOutcome?(runId: number, outcome: RunOutcome): RunOutcome;
  logger: Logger;
}

/** One run.start frame must stay under the 1 MiB IPC limit; older context beyond this is left out. */
const MAX_START_MESSAGES = 200;
const MAX_START_TEXT_BYTES = 512 * 1024;

export function fitStartMessages(messages: StoredMessage[]): StoredMessage[] {
  const kept: StoredMessage[] = [];
  let bytes = 0;
  for (let i = messages.length - 1; i >= 0 && kept.length < MAX_START_MESSAGES; i--) {
    const m = messages[i] as StoredMessage;
    // The frame carries JSON: escaping can double the size of text full of quotes or newlines.
    bytes += Buffer.byteLength(JSON.stringify(toChatMessage(m)));
    if (bytes > MAX_START_TEXT_BYTES && kept.length > 0) break;
    kept.push(m);
  }
  return kept.reverse();
}

/** Who the run is, as the host's handlers know it: from the run's context, never from the container. */
export function runIdentityOf(
  ctx: RunContext,
  mounts: { secretMounts: string[]; sharedMounts: string[] },
): RunIdentity {
  const firstGiven = ctx.messages[0]?.id;
  return {
    runId: ctx.runId,
    group: ctx.group,
    ...mounts,
    // Memory search leaves out what the run was given (the asking message and after).
    ...(firstGiven === undefined ? {} : { firstGivenId: firstGiven }),
  };
}

export interface LaunchedRun {
  session: RunHandle;
  key: { revoke(): void };
  container: ContainerProcess;
}

/**
 * The run's IPC session on a started container: its timers armed, its gateway key issued (revoked when it
 * ends: a key is never live without its run) and run.start sent with the context that fits one frame.
 */
export async function openRun(
  wiring: RunWiring,
  run: {
    ctx: RunContext;
    callbacks: RunCallbacks;
    container: ContainerProcess;
    identity: RunIdentity;
    /** The credential routes' URL as the container reaches the host. */
    credentialsUrl: string;
    startParams: Promise<StartParams>;
    stopGraceMs: number;
    guards?: RunSessionDeps['guards'];
  },
): Promise<LaunchedRun> {
  const { ctx, container, identity } = run;
  container.beginRun();
  const key = wiring.gateway.issueKey({ runId: String(ctx.runId), groupId: ctx.group.id });
  const maxImageBytes = wiring.maxImageBytes?.() ?? 0;
  try {
    const setup = wiring.commandSetup?.(ctx.group, run.credentialsUrl, key.credentialKey);
    const session = createRunSession({
      container,
      maxImageBytes,
      start: {
        ...(await run.startParams),
        runId: ctx.runId,
        group: {
          id: ctx.group.id,
          name: ctx.group.name,
          isAdmin: ctx.group.isAdmin,
          channel: ctx.group.channel,
        },
        messages: fitStartMessages(ctx.messages).map((m) => toChatMessage(m, maxImageBytes)),
        gatewayKey: key.key,
        ...(setup === undefined ? {} : { commandSetup: setup }),
      },
      handlers: (onDone, stopRun) => wiring.handlersFor(identity, run.callbacks, onDone, stopRun),
      guards: run.guards ?? [],
      onProtocolProblem: (p) => wiring.onProtocolProblem(identity, p),
      stopGraceMs: run.stopGraceMs,
      logger: wiring.logger.child({ runId: ctx.runId, groupId: ctx.group.id, container: container.name }),
    });
    return { session, key, container };
  } catch (err) {
    key.revoke();
    await container.stop('the run could not start', 0).catch(() => undefined);
    throw err;
  }
}

/**
 * The router's handle on a run whose container is still being launched: a stop asked meanwhile reaches
 * the session once it exists, and a launch that fails becomes the run's outcome (retryable unless the
 * runner says trying again cannot help).
 */
export function runHandleOf(
  wiring: Pick<RunWiring, 'logger' | 'settleOutcome' | 'onRunEnded'>,
  ctx: RunContext,
  launched: Promise<LaunchedRun>,
  hooks: {
    /** Takes the ended run's container off the critical path (stopped and removed in the background). */
    retire(container: ContainerProcess): void;
    retryable(err: unknown): boolean;
    afterEnd?(): void;
    /**
     * The run is over only once its container is gone: what the run changed reaches the host at its
     * container's end (a pod's group folder is copied back), and the group's next run must see it.
     */
    doneAtExit?: boolean;
    /**
     * With `doneAtExit`: what the container's end found that the agent could not know (the folder copied
     * back from a pod went over its quota), replacing the outcome when set.
     */
    endProblem?: () => string | undefined;
  },
): RunHandle {
  launched.catch(() => undefined);
  let stopReason: string | undefined;
  launched.then(
    (l) => {
      if (stopReason !== undefined) l.session.stop(stopReason);
    },
    () => undefined,
  );
  const accepted = launched.then((l) => l.session.accepted);
  accepted.catch(() => undefined);
  return {
    accepted,
    input: (messages) => launched.then((l) => l.session.input(messages)).catch(() => false),
    stop(reason) {
      stopReason = reason;
      void launched.then((l) => l.session.stop(reason)).catch(() => undefined);
    },
    done: launched
      .then(
        (l) =>
          l.session.done
            .finally(() => {
              l.key.revoke();
              hooks.retire(l.container);
            })
            .then(async (outcome) => {
              if (!hooks.doneAtExit) return outcome;
              await l.container.exited;
              const problem = hooks.endProblem?.();
              return problem === undefined ? outcome : { ok: false, reason: problem, retryable: false };
            }),
        (err: unknown) => {
          wiring.logger.error(
            { err, groupId: ctx.group.id, runId: ctx.runId },
            'could not start the agent container',
          );
          return {
            ok: false,
            reason: `could not start the agent: ${errorMessage(err)}`,
            retryable: hooks.retryable(err),
          };
        },
      )
      .then((outcome) => wiring.settleOutcome?.(ctx.runId, outcome) ?? outcome)
      .finally(() => {
        wiring.onRunEnded(ctx.runId);
        hooks.afterEnd?.();
      }),
  };
}

/** The set of runs' containers still going away, which a runner's close() waits for. */
export function createRetiring(): { retire(container: ContainerProcess): void; all(): Promise<unknown[]> } {
  const retiring = new Set<Promise<unknown>>();
  return {
    retire(container) {
      const gone = container.exited.finally(() => retiring.delete(gone));
      retiring.add(gone);
    },
    all: () => Promise.all([...retiring]),
  };
}
