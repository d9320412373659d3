import crypto from 'node:crypto';

/** The label that scopes orphan cleanup to containers of this data folder. */
export const LABEL_DATA = 'carapace.data';

/** A data folder's short, stable id: the value of LABEL_DATA on its containers. */
export function dataFolderLabel(dataDir: string): string {
  return crypto.createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
}

/** The gateway network of a data folder: each gets its own, so its firewall chain is its own. */
export function gatewayNetworkName(prefix: string, dataDir: string): string {
  return `${prefix}-${dataFolderLabel(dataDir).slice(0, 8)}`;
}
