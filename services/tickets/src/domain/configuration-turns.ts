/**
 * One configuration of an event at a time (turns, @svc/subgraph-server). Two configureTicketTiers calls of one event
 * that overlapped would each decide on what the other was changing: a range written back from a stale read could
 * fall below seats already sold, and seats blocked outside it would sell past the published capacity.
 */
import { inTurn, type Turn } from '@svc/subgraph-server'
import type { TicketsDomain } from './context'

export const inConfigurationTurn = <T>(d: TicketsDomain, eventKey: string, fn: (turn: Turn) => Promise<T>): Promise<T> =>
  inTurn(d.models.ConfigurationTurn, eventKey, fn, { busyMessage: 'another configuration of this event is in progress; retry', logger: d.logger })
