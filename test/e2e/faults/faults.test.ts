/**
 * The fault-injection suite (scripts/lib/faults.ts; docs/operations.md, "Fault injection"), time-scaled for CI: every
 * component its own process on a FerretDB and a Redis of the run's own; while an app produces test events, paid
 * checkouts, paid ticket holds and free claims through the real HTTP stack, worker processes are SIGKILLed over and over, the payments subgraph is
 * SIGKILLed during a charge and started again, Redis restarts losing all of its data, FerretDB is killed and restarted, and the
 * receiver is down for three scaled days. Every event the service
 * acknowledged must arrive (repeats are allowed and reported), refused orders and claims retried with their keys afterwards
 * must succeed at most once, every paid hold must have its tickets issued, every
 * payment and ticket event must have a delivery, and every delivery must end `delivered` with a consistent attempt log. `npm run faults` runs the same with 100 kills.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { attemptLogProblem, requestLogLines, runFaults, TRANSIENT_REFUSALS, type FaultReport } from '../../../scripts/lib/faults'

jest.setTimeout(600_000)

describe('the attempt log check', () => {
  const attempt = (number: number, outcome: string, run = 1) => ({ number, outcome, run })
  const delivered = { status: 'delivered', deliveredAt: new Date() }
  it('accepts a log that ends in its one delivered attempt, numbered from 1', () => {
    expect(attemptLogProblem({ ...delivered, attemptCount: 3, attempts: [attempt(1, 'failed'), attempt(2, 'interrupted'), attempt(3, 'delivered', 2)] })).toBeNull()
  })
  it('names what is wrong', () => {
    expect(attemptLogProblem({ status: 'pending', attemptCount: 0, deliveredAt: null, attempts: [] })).toBe('status pending')
    expect(attemptLogProblem({ ...delivered, attemptCount: 2, attempts: [attempt(1, 'delivered')] })).toBe('attemptCount 2 but 1 attempts logged (1)')
    expect(attemptLogProblem({ ...delivered, attemptCount: 2, attempts: [attempt(1, 'failed'), attempt(3, 'delivered')] })).toBe('attempt numbers 1,3')
    expect(attemptLogProblem({ ...delivered, attemptCount: 2, attempts: [attempt(1, 'delivered'), attempt(2, 'delivered')] })).toBe('2 delivered attempts, the last delivered')
    expect(attemptLogProblem({ ...delivered, attemptCount: 2, attempts: [attempt(1, 'failed', 2), attempt(2, 'delivered', 1)] })).toBe('runs out of order')
  })
})

describe("a refused retry's log lines", () => {
  it("gathers each process's lines about the request, its error named", () => {
    const dir = mkdtempSync(join(tmpdir(), 'faults-lines-'))
    try {
      writeFileSync(join(dir, 'payments.log'), [
        JSON.stringify({ level: 40, reqId: 'req_ab12', msg: 'the database cannot be reached', err: { type: 'MongoNetworkError', message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' } }),
        JSON.stringify({ level: 40, reqId: 'req_cd34', msg: 'another request' }),
        '[ioredis] Unhandled error event: req_ab12 in plain text',
      ].join('\n'))
      writeFileSync(join(dir, 'gateway.log'), JSON.stringify({ level: 30, reqId: 'req_ab12', msg: 'request completed' }))
      writeFileSync(join(dir, 'notes.txt'), 'req_ab12 is not a process log')
      expect(requestLogLines(dir, 'req_ab12').sort()).toEqual([
        'gateway: request completed',
        'payments: [ioredis] Unhandled error event: req_ab12 in plain text',
        'payments: the database cannot be reached (MongoNetworkError ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1)',
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('faults injected while deliveries flow', () => {
  let report: FaultReport
  beforeAll(async () => {
    report = await runFaults({ outageSeconds: 40, rate: 6, workerKills: 12, killIntervalMs: 2000, log: (line) => process.stdout.write(line) })
    console.info(JSON.stringify({ ...report, missing: report.missing.length, deliveries: { ...report.deliveries, notReceived: report.deliveries.notReceived.length } }))
  })

  it('injected every fault', () => {
    expect(report.faults).toMatchObject({ workerKills: 12, redisRestarts: 1, databaseRestarts: 1 })
    // one more for each kill that landed after its charge was answered (another payment is then tried)
    expect(report.faults.subgraphRestarts).toBeGreaterThanOrEqual(1)
    // kills landed during attempts: the next pick-up logged them interrupted
    expect(report.deliveries.interruptedAttempts).toBeGreaterThan(0)
  })

  it('the service acknowledged events of every kind, and refused others only as unavailable (never a 500)', () => {
    expect(report.produced.testEvents).toBeGreaterThan(50)
    expect(report.produced.payments).toBeGreaterThan(50)
    expect(report.produced.ticketOrders).toBeGreaterThan(30)
    expect(report.produced.claims).toBeGreaterThan(30)
    // `processing`: a pay whose charge's answer was lost in a fault, settled later by asking the processor; `408`:
    // Node's answer to a request it had not read whole in time, before any handler (TRANSIENT_REFUSALS)
    expect(Object.keys(report.refusedAnswers).filter((answer) => !TRANSIENT_REFUSALS.has(answer))).toEqual([])
  })

  it('refused orders and claims retried afterwards with their keys succeed once: one checkout, one hold, one payment event per order, one ticket per claim', () => {
    // the faults refused some (else this checks nothing)
    expect(report.retried.orders).toBeGreaterThan(0)
    expect(report.retried.refused).toEqual([])
    expect(report.retried.orders).toBe(report.refused.payments + report.refused.ticketOrders + report.refused.claims)
    expect(report.idempotency).toEqual([])
  })

  it('the payment killed during its charge: once its claim was a minute old the processor was asked, had no charge, and it failed as unconfirmed with its key closed', () => {
    // (its retry may find it settled already, by the sweep, or still unanswered and wait: either is right)
    expect(report.killedMidCharge).toEqual({
      order: report.killedMidCharge.order,
      status: 'failed',
      failureMessage: 'The payment could not be confirmed. No payment was made.',
      ledger: 'closed',
    })
  })

  it('lost nothing: every acknowledged event arrived, and every paid hold has its tickets, issued', () => {
    expect(report.missing).toEqual([])
    const { testEvents, payments, ticketOrders, tickets, claims } = report.produced
    expect(tickets).toBeGreaterThan(ticketOrders)
    // a ticket order owes its checkout's payment.completed and one ticket.issued per ticket; a claim its ticket.issued
    expect(report.delivered).toBe(testEvents + payments + ticketOrders + tickets + claims)
  })

  it('every payment and ticket event has a delivery, and every delivery arrived, delivered, with a consistent log', () => {
    expect(report.outbox.events).toBeGreaterThanOrEqual(report.produced.payments)
    expect(report.outbox.withoutDelivery).toEqual([])
    expect(report.deliveries.notReceived).toEqual([])
    expect(report.deliveries.inconsistent).toEqual([])
    expect(report.deliveries.byStatus).toEqual({ delivered: report.deliveries.total })
  })
})
