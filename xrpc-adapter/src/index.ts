export * from './server'
export { methodTable } from './methods'
export { renameErrors, xrpcMethod, type Handler, type HandlerContext, type MethodTable, type XrpcMethod } from './methods/types'
export { didDocument, didWebDocumentPath, type ServiceIdentity } from './did-document'
