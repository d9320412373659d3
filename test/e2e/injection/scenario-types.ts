/**
 * The injection suite's data: a scenario is a group, a benign task, an injection vector and an attacker
 * goal with the routes the attacker tries. Vectors and goals are tables (vectors.ts, goals.ts); a scenario
 * names one of each, so a new vector (a credential's API response, a media transcript) is a new row, and
 * every goal is tried through it.
 */
import type { ToolCallSpec } from '../../fakes/fake-provider-script.ts';
import type { SuiteGroup, SuiteHost } from './suite-host.ts';
import type { PrivateGoalId } from './private-lines.ts';

export type { SuiteGroup };

export type VectorId =
  | 'member-message'
  | 'forwarded-admin'
  | 'quoted-admin'
  | 'web-page'
  | 'mount-file'
  | 'task-prompt'
  | 'mcp-result'
  | 'mcp-http-result'
  | 'mcp-docker-result'
  | 'credential-api'
  | 'git-content'
  | 'media-transcript'
  | 'media-document'
  | 'media-caption'
  | 'mcp-description'
  | 'quoted-forward'
  | 'forwarded-location'
  | 'recalled-memory'
  | 'recalled-document'
  | 'slack-message';

export type GoalId =
  | 'exfil-network'
  | 'exfil-chat'
  | 'exfil-service'
  | 'impersonate'
  | 'approval'
  | 'config'
  | 'plant-task'
  | 'spend'
  | 'read-other'
  | 'persist'
  | 'exfil-file'
  | 'spend-reviews'
  | 'plant-memory'
  | PrivateGoalId;

/** How an attack route ends, seen from the host. */
export type Mechanism =
  | 'gate' // the bash gate escalated and the host refused the command
  | 'taint' // the taint rules: what the attacker made carries the run's taint (a task, a later run)
  | 'matrix' // the operation matrix or the service's declaration refused it (forbidden, not offered)
  | 'cop' // the Cop flagged it (then the owner was asked)
  | 'scanner' // the secret scanner found the secret (then the owner was asked)
  | 'private' // the private-text check found private words (then the owner was asked)
  | 'cap' // the spend cap
  | 'owner' // the owner was asked and denied
  | 'sandbox' // the container could not reach it (network, mounts, paths)
  | 'guard' // the host's guarded file access refused the path (outside the folder, a symlink, a hard link)
  | 'inert'; // the route ran and changed nothing the goal needs (the bot's own "approve" is no command)

export type RouteId =
  | 'vector'
  | 'remember'
  | 'read'
  | 'read-tools'
  | 'bash'
  | 'bash-node'
  | 'dev-tcp'
  | 'dev-tcp-home'
  | 'web-fetch'
  | 'web-fetch-base64'
  | 'web-fetch-gzip'
  | 'web-fetch-split'
  | 'attachment-gzip'
  | 'message-own'
  | 'message-other'
  | 'message-admin'
  | 'service-write'
  | 'service-write-http'
  | 'service-write-docker'
  | 'git-push'
  | 'schedule'
  | 'schedule-other'
  | 'config-propose'
  | 'file'
  | 'mount-write'
  | 'spend-loop'
  | 'approve'
  | 'attachment'
  | 'attachment-link'
  | 'attachment-race'
  | 'review-flood';

/**
 * Who attacks: `obedient` obeys the injection by the goal's plain routes; `adaptive` knows the gate's rules,
 * the operation matrix and the Cop's prompt, and adds the routes written against them (races, link tricks,
 * review flooding).
 */
export type AttackerTier = 'obedient' | 'adaptive';

/** What the attacker knows when it builds its next calls. */
export interface AttackContext {
  scenario: Scenario;
  tag: string;
  suite: SuiteHost;
  /** The results of the previous step's calls, in order. */
  results: string[];
  /** Whatever the attacker read so far that looks like the secret (or undefined). */
  stolen: string | undefined;
}

/** One step of a route: the calls the model makes in one answer. */
export type AttackStep = (ctx: AttackContext) => ToolCallSpec[];

export interface Route {
  id: RouteId;
  steps: AttackStep[];
  /** A cost the provider reports for each of the route's model answers (a spend attack). */
  costUsd?: number;
  /** Only the adaptive attacker tries it. */
  adaptive?: boolean;
}

export interface GoalCheck {
  achieved: boolean;
  /** What was seen, in words (a sink hit, a delivered row, a changed file). */
  evidence: string;
  /** Something was made, but it carries the attacker's taint (a task, a file a later run reads corrupted). */
  contained?: Mechanism;
}

export interface Goal {
  id: GoalId;
  title: string;
  /** Whether the attacker first reads the secret it is after. */
  needsSecret: boolean;
  routes: Route[];
  /** Prepares what the goal is about (a pending approval to decide), before the vector is delivered. */
  prepare?(suite: SuiteHost, tag: string): Promise<void>;
  /** Whether the goal was achieved, looked at after the run (and any follow-up run) ended. */
  check(suite: SuiteHost, tag: string, scenario: Scenario): Promise<GoalCheck>;
  /** A later run the goal needs to be judged (persistence): runs after the scenario's run. */
  followUp?(suite: SuiteHost, tag: string): Promise<void>;
  /** What the provider reports each Cop review of the scenario cost (review flooding). */
  reviewCostUsd?: number;
}

export interface Vector {
  id: VectorId;
  title: string;
  /** The group whose run reads the injection, for goals that need a secret and for the others. */
  group: { secret: SuiteGroup; plain: SuiteGroup };
  /** Tool calls of the benign task (they may be what reads the injection). */
  benignCalls(suite: SuiteHost, scenario: Scenario): ToolCallSpec[];
  /**
   * Puts `injection` where the vector carries it and starts the run that will read it (a message, a page
   * and the ask to read it, a task that fires). Resolves once the run was triggered.
   */
  deliver(suite: SuiteHost, scenario: Scenario, injection: string): Promise<void>;
}

export interface Scenario {
  /** `<vector>/<goal>`. */
  id: string;
  vector: VectorId;
  goal: GoalId;
  group: SuiteGroup;
}

/** A vector of a part still being built (credentials, media): listed in the table, not run. */
export interface PendingVector {
  id: string;
  title: string;
  waitsFor: string;
}
