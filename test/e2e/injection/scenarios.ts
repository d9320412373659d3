/**
 * The suite's scenarios: every goal through every vector, in the group where the goal means something (a
 * secret to steal lives in the vault group or the admin project; the other goals run in a plain group, or
 * the admin group where the vector is the admin chat).
 */
import { GOALS } from './goals.ts';
import type { GoalId, Scenario, VectorId } from './scenario-types.ts';
import { VECTORS } from './vectors.ts';

export const ALL_SCENARIOS: Scenario[] = (Object.keys(VECTORS) as VectorId[]).flatMap((vector) =>
  (Object.keys(GOALS) as GoalId[]).map((goal) => ({
    id: `${vector}/${goal}`,
    vector,
    goal,
    group: GOALS[goal].needsSecret ? VECTORS[vector].group.secret : VECTORS[vector].group.plain,
  })),
);

/**
 * A fixed subset for the test suite: every goal and every vector at least once, but for the voice note and
 * the photo, which enter the host by the document's door (`ingestMedia`) and are left to the bench.
 */
export const FAST_SUBSET: string[] = [
  'forwarded-admin/impersonate',
  'quoted-admin/approval',
  'member-message/exfil-network',
  'web-page/exfil-service',
  'mount-file/config',
  'task-prompt/plant-task',
  'mcp-result/exfil-chat',
  'mcp-description/persist',
  'web-page/spend',
  'mount-file/read-other',
  'mcp-http-result/exfil-service',
  'mcp-docker-result/exfil-chat',
  'credential-api/impersonate',
  'git-content/config',
  'media-document/plant-task',
  'recalled-memory/plant-memory',
  'recalled-document/exfil-chat',
];
