import type { GroupMountPlan } from './group-mounts.ts';

function describeRequest(request: unknown): string {
  if (typeof request === 'object' && request !== null && 'host_path' in request) {
    return String((request as { host_path: unknown }).host_path);
  }
  return JSON.stringify(request) ?? String(request);
}

/** Human-readable lines for `carapace mounts check <group>`. */
export function describeMountCheck(plan: GroupMountPlan): string {
  const lines: string[] = [];
  lines.push(
    `Mounts for group "${plan.groupId}" (${plan.isAdmin ? 'admin' : 'not admin'}): ` +
      `${plan.mounts.length} mounted, ${plan.rejected.length} rejected`,
  );
  const width = Math.max(0, ...plan.mounts.map((m) => m.containerPath.length));
  for (const m of plan.mounts) {
    const mode = m.readOnly ? 'ro' : 'rw';
    const target = m.containerPath.padEnd(width);
    if (m.kind === 'shadow') {
      lines.push(`  ${mode}  ${target}  hidden (${m.note ?? 'blocked'})`);
    } else {
      lines.push(`  ${mode}  ${target}  <- ${m.hostPath}${m.note ? `  [${m.note}]` : ''}`);
    }
  }
  if (plan.rejected.length > 0) {
    lines.push('Rejected:');
    for (const r of plan.rejected) lines.push(`  - ${describeRequest(r.request)}: ${r.reason}`);
  }
  if (plan.notes.length > 0) {
    lines.push('Notes:');
    for (const n of plan.notes) lines.push(`  - ${n}`);
  }
  return lines.join('\n');
}
