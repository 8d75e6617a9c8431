/**
 * One change of an approval request at a time (turns, @svc/subgraph-server): the app's repeated request and the
 * creator's decision each read the request and write it back, and on FerretDB the later write would put back what the
 * other changed: an app repeating its request while the creator revokes could restore `approved`.
 */
import { inTurn } from '@svc/subgraph-server'
import type { AppsDomain } from '../context'

/** The turn is the request's, by its key (known before the request exists). */
export const inApprovalTurn = <T>(
  d: Pick<AppsDomain, 'models' | 'logger'>,
  key: { appDid: string; recipientDid: string; environment: string },
  fn: () => Promise<T>,
): Promise<T> =>
  inTurn(d.models.ApprovalTurn, JSON.stringify([key.appDid, key.environment, key.recipientDid]), fn, {
    busyMessage: 'this approval request is being changed; retry',
    logger: d.logger,
  })
