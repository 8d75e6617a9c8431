/**
 * `npm run faults`: the fault-injection run (scripts/lib/faults.ts; docs/operations.md, "Fault injection") with
 * FAULTS_OUTAGE_SECONDS (240) standing for the receiver's three days down, FAULTS_RATE (5) events per second and
 * FAULTS_WORKER_KILLS (100) worker processes killed, one every FAULTS_KILL_INTERVAL_MS (1000) once the other is ready;
 * FAULTS_LOG_LEVEL (warn) is the processes' log level; FAULTS_LOG_DIR keeps every process's output there (by
 * default a temporary folder, removed after a clean run). Prints the counts and
 * exits 1 when an acknowledged event was lost, a delivery's log is inconsistent, a retried order failed or was paid twice.
 */
import { runFaults } from './lib/faults'

async function main() {
  const report = await runFaults({
    outageSeconds: Number(process.env.FAULTS_OUTAGE_SECONDS ?? 240),
    rate: Number(process.env.FAULTS_RATE ?? 5),
    workerKills: Number(process.env.FAULTS_WORKER_KILLS ?? 100),
    killIntervalMs: Number(process.env.FAULTS_KILL_INTERVAL_MS ?? 1000),
    logDir: process.env.FAULTS_LOG_DIR,
    logLevel: process.env.FAULTS_LOG_LEVEL,
    log: (line) => process.stdout.write(line),
  })
  const { faults, produced, refused, deliveries, outbox } = report
  const lost = report.missing.length + deliveries.notReceived.length + outbox.withoutDelivery.length
  console.log('')
  console.log(`| | |`)
  console.log(`|---|---|`)
  console.log(`| backend | FerretDB on ${report.backend}, scale ${report.scale.toExponential(2)}, ${report.seconds} s |`)
  console.log(`| faults | ${faults.workerKills} worker kills, ${faults.redisRestarts} Redis restart losing its data, ${faults.databaseRestarts} FerretDB kill and restart, ${faults.subgraphRestarts} payments subgraph kill and restart, receiver down ${faults.receiverDownSeconds} s (3 scaled days) |`)
  const owed = produced.testEvents + produced.payments + produced.ticketOrders + produced.tickets + produced.claims
  console.log(`| produced (acknowledged) | ${produced.testEvents} test events, ${produced.payments} payments, ${produced.ticketOrders} ticket orders (${produced.tickets} tickets), ${produced.claims} free claims |`)
  console.log(`| refused during faults | ${refused.testEvents} test events, ${refused.payments} payments, ${refused.ticketOrders} ticket orders, ${refused.claims} claims; answers ${JSON.stringify(report.refusedAnswers)} |`)
  const { retried } = report
  console.log(`| refused orders and claims retried after the faults (same key) | ${retried.orders}: ${retried.acknowledged} paid (${retried.alreadyPaid} by the refused attempt), ${retried.unpaid} not paid (${retried.unanswered.length} settled by asking the processor), ${retried.unavailable} answers 503 retried with backoff, ${retried.refused.length} refused; order ids seen twice ${report.idempotency.length} |`)
  console.log(`| delivered | ${report.delivered} of ${owed}; lost ${report.missing.length} |`)
  console.log(`| duplicates (at least once) | ${report.duplicates} |`)
  console.log(`| arrivals of unacknowledged events | ${report.unacknowledgedArrivals} |`)
  console.log(`| the payment killed during its charge | ${report.killedMidCharge.order}: ${report.killedMidCharge.status} (${report.killedMidCharge.failureMessage ?? '-'}), ledger ${report.killedMidCharge.ledger} |`)
  console.log(`| redriven after the outage | ${report.redriven} |`)
  console.log(`| deliveries in the database | ${deliveries.total} ${JSON.stringify(deliveries.byStatus)}, ${deliveries.attempts} attempts of which ${deliveries.interruptedAttempts} interrupted by a kill; not received ${deliveries.notReceived.length}; inconsistent logs ${deliveries.inconsistent.length} |`)
  console.log(`| outbox events (payments, tickets) | ${outbox.events}; without a delivery ${outbox.withoutDelivery.length} |`)
  const midChargeSettled = report.killedMidCharge.status === 'failed' && report.killedMidCharge.ledger === 'closed'
  if (lost > 0 || deliveries.inconsistent.length > 0 || retried.refused.length > 0 || report.idempotency.length > 0 || !midChargeSettled) {
    console.log(`\nFAILED: ${JSON.stringify({ killedMidCharge: midChargeSettled ? undefined : report.killedMidCharge, missing: report.missing.slice(0, 20), notReceived: deliveries.notReceived.slice(0, 20), withoutDelivery: outbox.withoutDelivery.slice(0, 20), inconsistent: deliveries.inconsistent.slice(0, 20), retriesRefused: retried.refused.slice(0, 20), idempotency: report.idempotency.slice(0, 20) })}`)
    console.log(`the processes' output: ${report.logDir}`)
    process.exit(1)
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
