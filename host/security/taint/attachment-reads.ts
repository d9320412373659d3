import type { RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { FileReadReport } from './secret-reads.ts';
import { describeTaint, type TaintRegistry } from './taint.ts';

export interface AttachmentReadsDeps {
  taint: Pick<TaintRegistry, 'get' | 'markCorrupted'>;
  audit: Pick<AuditStore, 'record'>;
}

/**
 * A document someone sent is nobody's own words, the owner's upload included (a bill, a form, a PDF from
 * anywhere): a run that reads one with `read_attachment` is corrupted, with an audit row when the taint
 * grows. So instructions inside a PDF meet a corrupted run's rules (the Cop, the owner), never a clean one.
 */
export function createAttachmentReads({ taint, audit }: AttachmentReadsDeps) {
  return {
    fileRead(identity: RunIdentity, report: FileReadReport): void {
      if (report.tool !== 'read_attachment' || taint.get(identity.runId).corruption) return;
      taint.markCorrupted(identity.runId);
      audit.record({
        runId: identity.runId,
        groupId: identity.group.id,
        operation: 'file.read',
        decision: 'tainted',
        taint: describeTaint(taint.get(identity.runId)),
        reason: 'corruption: read_attachment read a document someone sent',
        details: { path: report.path.slice(0, 2000), tool: report.tool },
      });
    },
  };
}
