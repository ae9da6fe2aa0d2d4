import { readFileSync } from 'node:fs';
import { CommandFailed, defineCommand, onePositional, parseDuration, print, UsageError, withRuntime, type CommandGroup } from './command.js';
import { DEVICE_CODE_GRANT_TYPE, type ClientOidcSettings, type RegisteredClient } from '../oauth/stores/clients.js';
import type { SubjectType } from '../oauth/oidc/subject.js';

const OIDC_DETAILS = [
  '--subject-type public|pairwise          OpenID `sub`: the user id (default) or per redirect host',
  '--post-logout-redirect-uri URI          where /logout may return to (repeat; replaces the list)',
  '--backchannel-logout-uri URI            receives Back-Channel Logout tokens ("" removes it)',
  '--backchannel-logout-session-required, --no-backchannel-logout-session-required   logout tokens carry sid, or not',
  '--frontchannel-logout-uri URI           loaded in an iframe when the user signs out ("" removes it)',
  '--frontchannel-logout-session-required, --no-frontchannel-logout-session-required   that URI gets iss and sid, or not',
  '--userinfo-signed-response-alg ES256|RS256   /userinfo answers with a signed JWT ("" for plain JSON)',
  '--id-token-signed-response-alg ES256|RS256   signs its ID Tokens and logout tokens (default ES256; "" resets it)',
  '--policy-uri URI, --tos-uri URI          linked from the consent page ("" removes it)',
];
const OIDC_OPTIONS = {
  'subject-type': { type: 'string' },
  'post-logout-redirect-uri': { type: 'string', multiple: true },
  'backchannel-logout-uri': { type: 'string' },
  'userinfo-signed-response-alg': { type: 'string' },
  'id-token-signed-response-alg': { type: 'string' },
  'backchannel-logout-session-required': { type: 'boolean' },
  'no-backchannel-logout-session-required': { type: 'boolean' },
  'frontchannel-logout-uri': { type: 'string' },
  'frontchannel-logout-session-required': { type: 'boolean' },
  'no-frontchannel-logout-session-required': { type: 'boolean' },
  'policy-uri': { type: 'string' },
  'tos-uri': { type: 'string' },
} as const;

/** `--name` and `--no-name`: true, false, or undefined for neither; `command` prefixes the usage error. */
function onOff(on: boolean | undefined, off: boolean | undefined, name: string, command?: string): boolean | undefined {
  if (on && off) throw new UsageError(`${command ? `${command}: ` : ''}use --${name} or --no-${name}, not both`);
  return on ? true : off ? false : undefined;
}

function oidcSettings(values: {
  'subject-type'?: string | undefined;
  'post-logout-redirect-uri'?: string[] | undefined;
  'backchannel-logout-uri'?: string | undefined;
  'userinfo-signed-response-alg'?: string | undefined;
  'id-token-signed-response-alg'?: string | undefined;
  'backchannel-logout-session-required'?: boolean | undefined;
  'no-backchannel-logout-session-required'?: boolean | undefined;
  'frontchannel-logout-uri'?: string | undefined;
  'frontchannel-logout-session-required'?: boolean | undefined;
  'no-frontchannel-logout-session-required'?: boolean | undefined;
  'policy-uri'?: string | undefined;
  'tos-uri'?: string | undefined;
}): ClientOidcSettings | undefined {
  const backchannelSession = onOff(values['backchannel-logout-session-required'], values['no-backchannel-logout-session-required'], 'backchannel-logout-session-required');
  const frontchannelSession = onOff(values['frontchannel-logout-session-required'], values['no-frontchannel-logout-session-required'], 'frontchannel-logout-session-required');
  const settings: ClientOidcSettings = {
    ...(backchannelSession === undefined ? {} : { backchannelLogoutSessionRequired: backchannelSession }),
    ...(frontchannelSession === undefined ? {} : { frontchannelLogoutSessionRequired: frontchannelSession }),
    ...(values['frontchannel-logout-uri'] === undefined ? {} : { frontchannelLogoutUri: values['frontchannel-logout-uri'] }),
    ...(values['subject-type'] === undefined ? {} : { subjectType: values['subject-type'] as SubjectType }),
    ...(values['post-logout-redirect-uri'] === undefined ? {} : { postLogoutRedirectUris: values['post-logout-redirect-uri'] }),
    ...(values['backchannel-logout-uri'] === undefined ? {} : { backchannelLogoutUri: values['backchannel-logout-uri'] }),
    ...(values['userinfo-signed-response-alg'] === undefined ? {} : { userinfoSignedResponseAlg: values['userinfo-signed-response-alg'] }),
    ...(values['id-token-signed-response-alg'] === undefined ? {} : { idTokenSignedResponseAlg: values['id-token-signed-response-alg'] }),
    ...(values['policy-uri'] === undefined ? {} : { policyUri: values['policy-uri'] }),
    ...(values['tos-uri'] === undefined ? {} : { tosUri: values['tos-uri'] }),
  };
  return Object.keys(settings).length ? settings : undefined;
}

/** What each `--grant` registers: the redirect flow and the device flow bring refresh tokens. */
const GRANT_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  authorization_code: ['authorization_code', 'refresh_token'],
  client_credentials: ['client_credentials'],
  device_code: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'],
  [DEVICE_CODE_GRANT_TYPE]: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'],
};

function grantTypesOf(grants: readonly string[] | undefined): string[] | undefined {
  if (!grants?.length) return undefined;
  const unknown = grants.filter((grant) => !Object.hasOwn(GRANT_OPTIONS, grant));
  if (unknown.length) throw new UsageError(`unknown --grant ${unknown.join(', ')}; use authorization_code, client_credentials or device_code`);
  return [...new Set(grants.flatMap((grant) => GRANT_OPTIONS[grant]!))];
}

function describe(client: RegisteredClient): string {
  return [
    `client_id:     ${client.client_id}`,
    ...(client.client_secret ? [`client_secret: ${client.client_secret}   (shown once; store it now)`] : []),
    `redirect_uris: ${client.redirect_uris.join(' ')}`,
    `scope:         ${client.scope}`,
    `grant types:   ${client.grant_types.join(' ')}`,
    `auth method:   ${client.token_endpoint_auth_method}`,
    ...(client.jwks_uri ? [`jwks_uri:      ${client.jwks_uri}`] : []),
    ...(client.dpop_bound_access_tokens ? ['DPoP:          required (dpop_bound_access_tokens)'] : []),
    ...(client.id_token_signed_response_alg ? [`ID Token alg:  ${client.id_token_signed_response_alg}`] : []),
  ].join('\n');
}

/** The JWK Set in `file`, for --jwks-file. */
function readJwksFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--jwks-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UsageError(`--jwks-file: ${file} is not JSON`);
  }
}

const create = defineCommand({
  summary: 'register a client (a confidential one gets a secret, shown once)',
  synopsis:
    'client create --name NAME [--grant authorization_code|client_credentials|device_code …] [--redirect-uri URI …] [--public] [--scope "products:read orders:read orders:write"] ' +
    '[--auth-method private_key_jwt (--jwks-uri URL | --jwks-file FILE)] [--require-dpop]',
  details: [
    '--name NAME          shown on the consent page',
    '--grant GRANT        authorization_code (the default: browser redirect, with refresh tokens),',
    '                     client_credentials (a service acting for itself; confidential only, no refresh token),',
    '                     device_code or urn:ietf:params:oauth:grant-type:device_code (TVs and CLIs; with refresh',
    '                     tokens); repeat for several',
    '--redirect-uri URI   https, or http on a loopback host; repeat for several; needed by authorization_code only',
    '--public             a public client: no secret, PKCE required',
    '--scope "…"          scopes it may request (default: all)',
    '--auth-method private_key_jwt   no secret: the client signs JWT assertions (RFC 7523) with a key of',
    '                     --jwks-uri URL (https; fetched and cached) or --jwks-file FILE (a JWK Set of public keys)',
    '--require-dpop       every token request must carry a DPoP proof (dpop_bound_access_tokens, RFC 9449)',
    ...OIDC_DETAILS,
  ],
  options: {
    name: { type: 'string' },
    grant: { type: 'string', multiple: true },
    'redirect-uri': { type: 'string', multiple: true },
    public: { type: 'boolean' },
    scope: { type: 'string' },
    'auth-method': { type: 'string' },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    'require-dpop': { type: 'boolean' },
    ...OIDC_OPTIONS,
  },
  async run({ io, values, config }) {
    if (!values.name) throw new UsageError('client create needs --name NAME');
    const grantTypes = grantTypesOf(values.grant);
    const redirectFlow = grantTypes === undefined || grantTypes.includes('authorization_code');
    if (redirectFlow && !values['redirect-uri']?.length) throw new UsageError('client create needs at least one --redirect-uri URI');
    if (!redirectFlow && values['redirect-uri']?.length) {
      throw new UsageError('--redirect-uri is used only by --grant authorization_code');
    }
    if (values.public && grantTypes?.includes('client_credentials')) {
      throw new UsageError('--grant client_credentials needs a confidential client (it authenticates with its secret); drop --public');
    }
    const method = values['auth-method'];
    if (method !== undefined && method !== 'private_key_jwt') {
      throw new UsageError('--auth-method must be private_key_jwt (a secret is the default, --public for none)');
    }
    if (method === undefined && (values['jwks-uri'] !== undefined || values['jwks-file'] !== undefined)) {
      throw new UsageError('--jwks-uri and --jwks-file go with --auth-method private_key_jwt');
    }
    const jwks = values['jwks-file'] === undefined ? undefined : readJwksFile(values['jwks-file']);
    await withRuntime(config(), async (runtime) => {
      const client = await runtime.clients.create({
        name: values.name!,
        redirectUris: values['redirect-uri'] ?? [],
        isPublic: Boolean(values.public),
        ...(values.scope === undefined ? {} : { scope: values.scope }),
        ...(method === undefined ? {} : { tokenEndpointAuthMethod: method }),
        ...(jwks === undefined ? {} : { jwks }),
        ...(values['jwks-uri'] === undefined ? {} : { jwksUri: values['jwks-uri'] }),
        ...(values['require-dpop'] ? { dpopBoundAccessTokens: true } : {}),
        ...(oidcSettings(values) === undefined ? {} : { oidc: oidcSettings(values)! }),
        ...(grantTypes === undefined ? {} : { grantTypes }),
      });
      const { client_name: _name, ...shown } = client;
      print(io, values.json, shown, describe(client));
    });
  },
});

const list = defineCommand({
  summary: 'list the registered clients (never their secrets)',
  synopsis: 'client list',
  options: {},
  async run({ io, values, config }) {
    await withRuntime(config(), async (runtime) => {
      const clients = await runtime.clients.list();
      print(
        io,
        values.json,
        { clients },
        clients.length === 0
          ? 'No clients.'
          : clients.map((c) => `${c.client_id}\t${c.client_name}\t${c.token_endpoint_auth_method}\t${c.redirect_uris.join(' ')}`).join('\n'),
      );
    });
  },
});

const update = defineCommand({
  summary: "change a client's name, redirect URIs, scopes, grants, keys or DPoP requirement",
  synopsis:
    'client update ID [--name NAME] [--redirect-uri URI …] [--add-redirect-uri URI …] [--remove-redirect-uri URI …] [--scope "…"] ' +
    '[--grant GRANT …] [--jwks-uri URL | --jwks-file FILE] [--require-dpop | --no-require-dpop]',
  takesArguments: true,
  details: [
    '--redirect-uri URI          replace every redirect URI with these (repeat for several)',
    '--add-redirect-uri URI      add one (repeatable)',
    '--remove-redirect-uri URI   remove one (repeatable); a client keeps at least one',
    '--grant GRANT               replace the grants: authorization_code, client_credentials, device_code (repeatable)',
    '--jwks-uri URL, --jwks-file FILE   replace a private_key_jwt client\'s keys (rotation: list old and new keys in the',
    '                            file until the client signs with the new one)',
    '--require-dpop, --no-require-dpop  make DPoP proofs mandatory at /token, or optional again',
    ...OIDC_DETAILS,
    'Running servers see the change within 5 seconds (their client cache).',
  ],
  options: {
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'add-redirect-uri': { type: 'string', multiple: true },
    'remove-redirect-uri': { type: 'string', multiple: true },
    scope: { type: 'string' },
    grant: { type: 'string', multiple: true },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    'require-dpop': { type: 'boolean' },
    'no-require-dpop': { type: 'boolean' },
    ...OIDC_OPTIONS,
  },
  async run({ io, values, positionals, config }) {
    const id = onePositional('client update', 'client ID', positionals);
    if (values['jwks-uri'] !== undefined && values['jwks-file'] !== undefined) throw new UsageError('client update: use --jwks-uri or --jwks-file, not both');
    const requireDpop = onOff(values['require-dpop'], values['no-require-dpop'], 'require-dpop', 'client update');
    const grantTypes = grantTypesOf(values.grant);
    const keys =
      values['jwks-file'] !== undefined ? { jwks: readJwksFile(values['jwks-file']) } : values['jwks-uri'] !== undefined ? { jwksUri: values['jwks-uri'] } : undefined;
    const adding = values['add-redirect-uri'] ?? [];
    const removing = values['remove-redirect-uri'] ?? [];
    if (values['redirect-uri'] && (adding.length || removing.length)) {
      throw new UsageError('client update: use --redirect-uri (replace all) or --add-/--remove-redirect-uri, not both');
    }
    const oidc = oidcSettings(values);
    const unchanged = values.name === undefined && values.scope === undefined && !values['redirect-uri'] && !adding.length && !removing.length;
    if (unchanged && !oidc && !grantTypes && !keys && requireDpop === undefined) {
      throw new UsageError(
        'client update needs something to change: --name, --redirect-uri, --add-redirect-uri, --remove-redirect-uri, --scope, --grant, --jwks-uri, --jwks-file or --require-dpop',
      );
    }
    await withRuntime(config(), async (runtime) => {
      const current = await runtime.clients.find(id);
      if (!current) throw new CommandFailed(`no client with id ${id}`);
      let redirectUris = values['redirect-uri'];
      if (adding.length || removing.length) {
        const missing = removing.filter((uri) => !current.redirectUris.includes(uri));
        if (missing.length) throw new CommandFailed(`client ${id} has no redirect URI ${missing.join(', ')}`);
        redirectUris = [...current.redirectUris.filter((uri) => !removing.includes(uri)), ...adding];
      }
      const updated = await runtime.clients.update(id, {
        ...(values.name === undefined ? {} : { name: values.name }),
        ...(values.scope === undefined ? {} : { scope: values.scope }),
        ...(redirectUris === undefined ? {} : { redirectUris }),
        ...(oidc === undefined ? {} : { oidc }),
        ...(grantTypes === undefined ? {} : { grantTypes }),
        ...(keys === undefined ? {} : { keys }),
        ...(requireDpop === undefined ? {} : { dpopBoundAccessTokens: requireDpop }),
      });
      if (!updated) throw new CommandFailed(`no client with id ${id}`);
      print(io, values.json, updated, `Updated client ${id} (${updated.client_name}).\n${describe(updated)}`);
    });
  },
});

const rotateSecret = defineCommand({
  summary: 'issue a new client secret; the old one keeps working for --overlap',
  synopsis: 'client rotate-secret ID [--overlap 1h]',
  takesArguments: true,
  details: [
    '--overlap DURATION   how long the old secret keeps working: 0 (stops at once: use this when it leaked),',
    '                     90s, 15m, 1h (default), 2d; at most 30 days',
  ],
  options: { overlap: { type: 'string' } },
  async run({ io, values, positionals, config }) {
    const id = onePositional('client rotate-secret', 'client ID', positionals);
    const overlap = parseDuration('--overlap', values.overlap ?? '1h', 30 * 86_400);
    await withRuntime(config(), async (runtime) => {
      const rotated = await runtime.clients.rotateSecret(id, overlap);
      if (!rotated) throw new CommandFailed(`no client with id ${id}`);
      const until = rotated.previousSecretExpiresAt?.toISOString() ?? null;
      print(
        io,
        values.json,
        { client_id: id, client_secret: rotated.secret, previous_secret_expires_at: until },
        [
          `client_id:     ${id}`,
          `client_secret: ${rotated.secret}   (shown once; store it now)`,
          until ? `The previous secret keeps working until ${until}.` : 'The previous secret no longer works.',
        ].join('\n'),
      );
    });
  },
});

const remove = defineCommand({
  summary: 'delete a client and every token issued to it',
  synopsis: 'client delete ID',
  takesArguments: true,
  options: {},
  async run({ io, values, positionals, config }) {
    const id = onePositional('client delete', 'client ID', positionals);
    await withRuntime(config(), async (runtime) => {
      if (!(await runtime.clients.delete(id))) throw new CommandFailed(`no client with id ${id}`);
      print(io, values.json, { deleted: id }, `Deleted client ${id} and every token issued to it.`);
    });
  },
});

export default {
  summary: 'register and manage OAuth clients',
  subcommands: { create, list, update, 'rotate-secret': rotateSecret, delete: remove },
} satisfies CommandGroup;
