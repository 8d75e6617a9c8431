/**
 * The shared vocabulary: the words every workspace uses, defined once. Identifier syntax is @atproto/syntax's, never a
 * hand-written pattern, so a DID or AT-URI we accept is one the AT Protocol accepts.
 */
export * from './environment'
export * from './identifiers'
export * from './text'
export * from './principals'
export * from './events'
export * from './currency'
export * from './datetime'
