/**
 * A local HTTP receiver for delivery tests: records every request (raw body, headers, arrival time) and answers
 * with whatever the test's `answer` function says: a status, body and headers, a delay, or no answer at all.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ReceivedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** header names in the order and case they arrived */
  headerNames: string[]
  body: string
  at: number
}

export type Answer =
  | { status: number; body?: string | object; headers?: Record<string, string>; delayMs?: number }
  /** never answer (the connection stays open until the sender gives up or the receiver closes) */
  | 'hang'

export type AnswerFn = (req: ReceivedRequest, index: number) => Answer | Promise<Answer>

export interface Receiver {
  url: string
  requests: ReceivedRequest[]
  /** replace the answer function */
  answer: AnswerFn
  close(): Promise<void>
}

export async function startReceiver(answer: AnswerFn = () => ({ status: 200, body: { ok: true } })): Promise<Receiver> {
  const requests: ReceivedRequest[] = []
  const open = new Set<ServerResponse>()
  const receiver: Receiver = { url: '', requests, answer, close: async () => undefined }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const headerNames = req.rawHeaders.filter((_, i) => i % 2 === 0)
      const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, headerNames, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      const index = requests.push(received) - 1
      void (async () => {
        const a = await receiver.answer(received, index)
        if (a === 'hang') {
          open.add(res)
          return
        }
        if (a.delayMs) {
          open.add(res)
          await new Promise((r) => setTimeout(r, a.delayMs))
          open.delete(res)
          if (res.destroyed || res.writableEnded) return
        }
        const body = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body)
        res.writeHead(a.status, { 'content-type': typeof a.body === 'object' ? 'application/json' : 'text/plain', ...a.headers })
        res.end(body)
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end('receiver error')
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  receiver.close = async () => {
    for (const res of open) res.destroy()
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return receiver
}
