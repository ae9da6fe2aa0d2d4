/**
 * The caller's orders. Every write is one conditional statement, never read-then-write: a status move is
 * `UPDATE … WHERE status = ANY(<states it may come from>)`, an ETag precondition `… AND updated_at = <tagged time>`,
 * and only the columns named in the input are set, so concurrent updates of different fields both survive.
 */
import { and, eq, inArray, or, sql, type SQL } from 'drizzle-orm';
import { builder } from '../builder.js';
import { userIdOf, type GraphQLContext } from '../context.js';
import { GqlFailedPrecondition, GqlInvalidArgument, GqlNotFound, GqlUnauthenticated } from '../errors.js';
import {
  connectionArgs,
  connectionCost,
  connectionType,
  nestedLimit,
  nestedListArgs,
  nestedListCost,
  nestedOrder,
  page,
  pageArgs,
  pageCost,
  pageQuery,
  type NestedListBounds,
} from '../pagination.js';
import { allOf, listArgs, listQuery, orderByOf, resolveConnection, type ListSpec } from '../listing.js';
import { needsScope } from '../scopes.js';
import { orderItems, orders, orderStatus, products } from '../../db/schema.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { InvalidToken } from '../../oauth/errors.js';
import { POLICY } from '../../policy.js';
import { placeholder } from '../../db/performance/relational-query-cache.js';
import { claimKey, idempotencyKeyProblem, noteReplay, orderRequestHash, recordOrder } from '../idempotency.js';

type OrderRow = typeof orders.$inferSelect;

export type OrderStatusValue = (typeof orderStatus.enumValues)[number];

export const MAX_MEMO_LENGTH = 1000;
export const MAX_ORDER_ITEMS = POLICY.maxOrderItems.value;
export const MAX_ITEM_QUANTITY = 1000;
const MAX_TOTAL_CENTS = 2_147_483_647; // orders.total_cents is a PostgreSQL integer

/** An order's items: by default all of them, since createOrder accepts at most MAX_ORDER_ITEMS. */
export const ITEMS: NestedListBounds = { field: 'items', defaultSize: MAX_ORDER_ITEMS, maxSize: MAX_ORDER_ITEMS, sortable: { id: 'id', quantity: 'quantity' } };

export const STATUS_MOVES: Readonly<Record<OrderStatusValue, readonly OrderStatusValue[]>> = {
  pending: ['paid', 'cancelled'],
  paid: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: [],
};

/** The states from which an order may be set to `to`; its own state too, so a replayed "cancel" is not an error. */
export function statesMovableTo(to: OrderStatusValue): OrderStatusValue[] {
  return orderStatus.enumValues.filter((from) => from === to || STATUS_MOVES[from].includes(to));
}

export const OrderStatus = builder.enumType('OrderStatus', {
  description: 'pending → paid | cancelled; paid → shipped | cancelled; shipped → delivered. delivered and cancelled are final.',
  values: Object.fromEntries(orderStatus.enumValues.map((value) => [value.toUpperCase(), { value }])) as {
    [V in OrderStatusValue as Uppercase<V>]: { value: V };
  },
});

/**
 * The strong ETag of an order's state, `"base64url(<id>:<updated_at>)"`: every write moves `updated_at` forward,
 * and the tag is reversible so a precondition can be checked inside the UPDATE itself.
 */
export function orderEtag(id: number, updatedAt: Date): string {
  return `"${Buffer.from(`${id}:${updatedAt.toISOString()}`).toString('base64url')}"`;
}

export function etagTime(etag: string, id: number): Date | undefined {
  const match = /^"([A-Za-z0-9_-]{1,200})"$/.exec(etag.trim());
  if (!match) return undefined;
  const [taggedId, iso] = Buffer.from(match[1]!, 'base64url').toString('utf8').split(/:(.*)/s, 2);
  if (taggedId !== String(id) || !iso) return undefined;
  const time = new Date(iso);
  return Number.isNaN(time.getTime()) || time.toISOString() !== iso ? undefined : time;
}

// Drivers hand timestamps to JavaScript truncated to milliseconds, so tags compare at that precision.
const updatedAtMillis = sql`date_trunc('milliseconds', ${orders.updatedAt})`;
const nextUpdatedAt = sql`greatest(date_trunc('milliseconds', now()), ${updatedAtMillis} + interval '1 millisecond')`;

export const OrderItem = builder.drizzleObject('orderItems', {
  name: 'OrderItem',
  select: {},
  fields: (t) => ({
    productId: t.exposeInt('productId', { description: 'The product ordered; readable with orders:read alone (`product` needs products:read).' }),
    product: t.relation('product'),
    quantity: t.exposeInt('quantity'),
    unitPriceCents: t.exposeInt('unitPriceCents', { description: 'The price of one unit when the order was placed.' }),
  }),
});

export const Order = builder.drizzleObject('orders', {
  name: 'Order',
  select: {},
  fields: (t) => ({
    id: t.exposeInt('id'),
    status: t.expose('status', { type: OrderStatus }),
    memo: t.exposeString('memo', { nullable: true }),
    items: t.relation('items', {
      description: `The order's items in the order they were given: the first \`limit\` (default and at most ${ITEMS.maxSize}, which is every item).`,
      args: nestedListArgs(ITEMS),
      complexity: nestedListCost(ITEMS),
      query: (args) => ({ orderBy: nestedOrder(ITEMS, args), limit: nestedLimit(ITEMS, args) }),
    }),
    totalCents: t.exposeInt('totalCents'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    etag: t.string({
      description: 'Strong entity tag of this state of the order; pass it to updateOrder to update only this state.',
      select: { columns: { id: true, updatedAt: true } },
      resolve: (order) => orderEtag(order.id, order.updatedAt),
    }),
  }),
});

export const ORDER_LIST: ListSpec = {
  name: 'orders',
  filter: {
    id: { column: 'id', type: 'int' },
    status: { column: 'status', type: 'enum', values: orderStatus.enumValues },
    memo: { column: 'memo', type: 'string' },
    totalCents: { column: 'totalCents', type: 'int' },
    createdAt: { column: 'createdAt', type: 'timestamp' },
    updatedAt: { column: 'updatedAt', type: 'timestamp' },
    'items.productId': { relation: 'items', column: 'productId', type: 'int' },
    'items.quantity': { relation: 'items', column: 'quantity', type: 'int' },
  },
  sort: {
    id: { column: 'id', type: 'int' },
    createdAt: { column: 'createdAt', type: 'timestamp' },
    totalCents: { column: 'totalCents', type: 'int' },
  },
  defaultOrder: [{ field: 'id', direction: 'desc' }],
};

const ownOrders = { userId: placeholder('userId') };

const OrderConnection = connectionType<OrderRow>('Order', Order);

builder.queryFields((t) => ({
  orders: t.drizzleField({
    type: [Order],
    description: "The caller's orders, newest first.",
    extensions: needsScope('orders:read'),
    args: { ...pageArgs, ...listArgs },
    complexity: pageCost,
    resolve: (query, _root, args, context) => {
      const paged = page(args, context);
      const { filter, keys } = listQuery(ORDER_LIST, args);
      const config = query({
        where: allOf(ownOrders, filter.where) as never,
        orderBy: orderByOf(keys),
        ...pageQuery(paged),
      });
      return context.queries.findMany<OrderRow>(context.db, 'orders', config, { ...filter.values, userId: userIdOf(context), offset: paged.offset });
    },
  }),
  ordersConnection: t.field({
    type: OrderConnection,
    description: "The caller's orders as a cursor connection: filtered (AIP-160), ordered (AIP-132, newest first by default) and paged by `after`.",
    extensions: needsScope('orders:read'),
    args: connectionArgs,
    complexity: connectionCost,
    resolve: (_root, args, context, info) =>
      resolveConnection<OrderRow>(
        { spec: ORDER_LIST, table: 'orders', typeName: 'Order', args, scope: { where: ownOrders, values: { userId: userIdOf(context) } } },
        context,
        info,
      ),
  }),
  order: t.drizzleField({
    type: Order,
    nullable: true,
    description: "One of the caller's orders; null when it does not exist or belongs to someone else.",
    extensions: needsScope('orders:read'),
    args: { id: t.arg.int({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.queries.findFirst<OrderRow>(context.db, 'orders', query({ where: { id: placeholder('id'), userId: placeholder('userId') } }), {
        id: args.id,
        userId: userIdOf(context),
      }),
  }),
}));

const OrderItemInput = builder.inputType('OrderItemInput', {
  fields: (t) => ({
    productId: t.int({ required: true }),
    quantity: t.int({ required: true, description: `From 1 to ${MAX_ITEM_QUANTITY}.` }),
  }),
});

const CreateOrderInput = builder.inputType('CreateOrderInput', {
  fields: (t) => ({
    items: t.field({ type: [OrderItemInput], required: true, description: `1 to ${MAX_ORDER_ITEMS} distinct products.` }),
    memo: t.string({ description: `At most ${MAX_MEMO_LENGTH} characters.` }),
  }),
});

const UpdateOrderInput = builder.inputType('UpdateOrderInput', {
  description: 'Only the fields present are changed; `memo: null` clears the memo.',
  fields: (t) => ({
    status: t.field({ type: OrderStatus }),
    memo: t.string({ description: `At most ${MAX_MEMO_LENGTH} characters.` }),
  }),
});

const LONE_SURROGATE = /\p{Cs}/u;

function checkMemo(memo: string | null | undefined): void {
  if (memo != null && [...memo].length > MAX_MEMO_LENGTH) {
    throw new GqlInvalidArgument(`memo must be at most ${MAX_MEMO_LENGTH} characters`, { extensions: { field: 'memo' } });
  }
  // PostgreSQL text cannot hold U+0000.
  if (memo?.includes('\u0000')) {
    throw new GqlInvalidArgument('memo must not contain the NUL character', { extensions: { field: 'memo' } });
  }
  // JSON may carry half of a surrogate pair ("\ud800"); the driver would store U+FFFD in its place.
  if (memo != null && LONE_SURROGATE.test(memo)) {
    throw new GqlInvalidArgument('memo must be valid Unicode text (it holds half of a surrogate pair)', { extensions: { field: 'memo' } });
  }
}

interface NewOrderItem {
  productId: number;
  quantity: number;
}

function checkItems(items: readonly NewOrderItem[]): void {
  if (items.length < 1 || items.length > MAX_ORDER_ITEMS) {
    throw new GqlInvalidArgument(`an order has 1 to ${MAX_ORDER_ITEMS} items, got ${items.length}`, { extensions: { field: 'items' } });
  }
  const seen = new Set<number>();
  for (const item of items) {
    if (item.quantity < 1 || item.quantity > MAX_ITEM_QUANTITY) {
      throw new GqlInvalidArgument(`quantity must be from 1 to ${MAX_ITEM_QUANTITY}, got ${item.quantity}`, {
        extensions: { field: 'items.quantity' },
      });
    }
    if (seen.has(item.productId)) {
      throw new GqlInvalidArgument(`product ${item.productId} appears twice; give one item per product`, {
        extensions: { field: 'items.productId' },
      });
    }
    seen.add(item.productId);
  }
}

/**
 * Inserts the order and its items at today's prices in one transaction, claiming the idempotency key first (idempotency.ts).
 * `replayed`: the key's first request created the order, this one only gets it.
 */
async function insertOrder(
  context: GraphQLContext,
  items: readonly NewOrderItem[],
  memo: string | null,
  idempotencyKey?: string,
): Promise<{ id: number; replayed: boolean }> {
  const owner = { userId: userIdOf(context), clientId: context.principal.clientId };
  return context.db.transaction(async (tx) => {
    if (idempotencyKey !== undefined) {
      const { replayOf } = await claimKey(tx, owner, idempotencyKey, orderRequestHash(items, memo)).catch((error: unknown) => {
        if (isForeignKeyViolation(error)) throw GqlUnauthenticated.fromInvalidToken(new InvalidToken('the access token has been revoked'));
        throw error;
      });
      if (replayOf !== undefined) return { id: replayOf, replayed: true };
    }
    const ids = items.map((item) => item.productId);
    const found = await tx
      .select({ id: products.id, priceCents: products.priceCents, currency: products.currency })
      .from(products)
      .where(inArray(products.id, ids));
    const byId = new Map(found.map((product) => [product.id, product]));
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length) {
      throw new GqlInvalidArgument(`no product ${missing.join(', ')}`, { extensions: { field: 'items.productId' } });
    }
    if (new Set(found.map((product) => product.currency)).size > 1) {
      throw new GqlInvalidArgument('all items of an order must be priced in the same currency', { extensions: { field: 'items' } });
    }
    const lines = items.map((item) => ({ ...item, unitPriceCents: byId.get(item.productId)!.priceCents }));
    const totalCents = lines.reduce((sum, line) => sum + line.unitPriceCents * line.quantity, 0);
    if (totalCents > MAX_TOTAL_CENTS) {
      throw new GqlInvalidArgument('the order total is too large', { extensions: { field: 'items' } });
    }
    // The account (and with it the grant) may be deleted after the token was checked: that is a
    // revoked token (401), not a server error; a product deleted meanwhile is the client's to fix.
    const [order] = await tx
      .insert(orders)
      .values({ userId: userIdOf(context), memo, totalCents })
      .returning({ id: orders.id })
      .catch((error: unknown) => {
        if (isForeignKeyViolation(error)) throw GqlUnauthenticated.fromInvalidToken(new InvalidToken('the access token has been revoked'));
        throw error;
      });
    await tx
      .insert(orderItems)
      .values(lines.map((line) => ({ ...line, orderId: order!.id })))
      .catch((error: unknown) => {
        if (isForeignKeyViolation(error)) throw new GqlInvalidArgument('a product of this order no longer exists', { extensions: { field: 'items.productId' } });
        throw error;
      });
    if (idempotencyKey !== undefined) await recordOrder(tx, owner, idempotencyKey, order!.id);
    return { id: order!.id, replayed: false };
  });
}

interface OrderChanges {
  status?: OrderStatusValue | null | undefined;
  memo?: string | null | undefined;
}

/**
 * Applies `input` with one conditional UPDATE; if no row matches, reads the order to report why (NOT_FOUND, ETag,
 * illegal move), and tries again when there is no reason, since the order then changed in between.
 */
async function applyOrderChanges(context: GraphQLContext, id: number, input: OrderChanges, etag: string | null | undefined): Promise<void> {
  const changes: { status?: OrderStatusValue; memo?: string | null; updatedAt: SQL } = { updatedAt: nextUpdatedAt };
  if (input.status !== undefined) {
    if (input.status === null) throw new GqlInvalidArgument('status cannot be null', { extensions: { field: 'status' } });
    changes.status = input.status;
  }
  if (input.memo !== undefined) {
    checkMemo(input.memo);
    changes.memo = input.memo;
  }
  if (changes.status === undefined && changes.memo === undefined) {
    throw new GqlInvalidArgument('give at least one of status and memo to change', { extensions: { field: 'input' } });
  }
  // A change to the values the order already has keeps updated_at, and so the ETag: sending
  // back what was just read is a true no-op (AIP-161).
  const differs = or(
    ...(changes.status === undefined ? [] : [sql`${orders.status} is distinct from ${changes.status}`]),
    ...(changes.memo === undefined ? [] : [sql`${orders.memo} is distinct from ${changes.memo}`]),
  );
  changes.updatedAt = sql`case when ${differs} then ${nextUpdatedAt} else ${orders.updatedAt} end`;
  const expectedTime = etag == null ? undefined : (etagTime(etag, id) ?? null);
  const owned = [eq(orders.id, id), eq(orders.userId, userIdOf(context))];
  const conditions = [...owned];
  if (changes.status) conditions.push(inArray(orders.status, statesMovableTo(changes.status)));
  if (expectedTime) conditions.push(eq(updatedAtMillis, expectedTime));

  for (let attempt = 0; attempt < 3; attempt++) {
    if (expectedTime !== null) {
      const updated = await context.db.update(orders).set(changes).where(and(...conditions)).returning({ id: orders.id });
      if (updated.length > 0) return;
    }
    const [current] = await context.db.select({ status: orders.status, updatedAt: orders.updatedAt }).from(orders).where(and(...owned));
    if (!current) throw new GqlNotFound(`no order ${id}`);
    if (expectedTime === null || (expectedTime && current.updatedAt.getTime() !== expectedTime.getTime())) {
      throw new GqlFailedPrecondition('the order has changed since the given ETag was read', {
        extensions: { reason: 'ETAG_MISMATCH', etag: orderEtag(id, current.updatedAt) },
      });
    }
    if (changes.status && !statesMovableTo(changes.status).includes(current.status)) {
      throw new GqlFailedPrecondition(`cannot move an order from ${current.status} to ${changes.status}`, {
        extensions: { reason: 'ILLEGAL_STATUS_MOVE', from: current.status.toUpperCase(), to: changes.status.toUpperCase() },
      });
    }
  }
  throw new GqlFailedPrecondition('the order kept changing while it was being updated; try again', {
    extensions: { reason: 'CONCURRENT_UPDATE' },
  });
}

builder.mutationFields((t) => ({
  createOrder: t.drizzleField({
    type: Order,
    // Nullable, so a failed mutation nulls only its own field and the others' results stay visible.
    nullable: true,
    description: 'Places an order for the caller at the current prices; it starts pending.',
    extensions: needsScope('orders:write'),
    args: {
      input: t.arg({ type: CreateOrderInput, required: true }),
      idempotencyKey: t.arg.string({
        description:
          'Makes retries safe: the same key with the same input within 24 hours returns the order the first call created ' +
          '(in its current state) instead of placing another; with a different input it fails with FAILED_PRECONDITION ' +
          '(IDEMPOTENCY_KEY_REUSED). Keys are per user and client, 1 to 255 printable ASCII characters.',
      }),
    },
    resolve: async (query, _root, { input, idempotencyKey }, context) => {
      checkItems(input.items);
      checkMemo(input.memo);
      if (idempotencyKey != null) {
        const problem = idempotencyKeyProblem(idempotencyKey);
        if (problem) throw new GqlInvalidArgument(`idempotencyKey ${problem}`, { extensions: { field: 'idempotencyKey', reason: 'INVALID_IDEMPOTENCY_KEY' } });
      }
      const { id, replayed } = await insertOrder(context, input.items, input.memo ?? null, idempotencyKey ?? undefined);
      if (replayed) noteReplay();
      const order = await context.db.query.orders.findFirst(query({ where: { id } }));
      if (!order) throw new GqlNotFound(`no order ${id}`);
      return order;
    },
  }),
  updateOrder: t.drizzleField({
    type: Order,
    nullable: true,
    description: 'Changes exactly the fields present in the input. With `etag`, only if the order is still in that state.',
    extensions: needsScope('orders:write'),
    args: {
      id: t.arg.int({ required: true }),
      input: t.arg({ type: UpdateOrderInput, required: true }),
      etag: t.arg.string({ description: 'An Order.etag; when the order has changed since, fails with FAILED_PRECONDITION (ETAG_MISMATCH).' }),
    },
    resolve: async (query, _root, args, context) => {
      await applyOrderChanges(context, args.id, args.input, args.etag);
      const order = await context.db.query.orders.findFirst(query({ where: { id: args.id, userId: userIdOf(context) } }));
      if (!order) throw new GqlNotFound(`no order ${args.id}`);
      return order;
    },
  }),
}));
