/** The receiveEvent lexicon, what an app's XRPC receiver is typed from, knows every event type the service sends. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { EVENT_TYPES } from '@svc/vocabulary'

it("receiveEvent's `type` knows exactly the event types the service sends", () => {
  const lexicon = JSON.parse(readFileSync(join(__dirname, '..', 'lexicons', 'money', 'svc', 'event', 'receiveEvent.json'), 'utf8'))
  expect([...lexicon.defs.main.input.schema.properties.type.knownValues].sort()).toEqual([...EVENT_TYPES].sort())
})
