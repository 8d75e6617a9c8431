export * from './server'
export { methodTable } from './methods'
export type { GatewayMethod } from './methods/types'
export { didDocument, didWebDocumentPath, type ServiceIdentity } from './did-document'
