#!/usr/bin/python3
#
# gen.py - protocol code generator: schema/*.api -> build/gen/proto_*.{c,h}.
#
# Usage: gen.py <schema dir> <output dir>
#
# Reads every <Name>.api file (format: docs/schema-format.md) and writes
#   proto_msgs.h    structs, enum api_key, proto_apis[], proto_is_flexible()
#   proto_msgs.c    decoders, encoders and _init functions for every message
#   proto_sample.h  <Msg>_sample() declarations (test support only)
#   proto_sample.c  deterministic non-default sample values per version
#
# Shaped as: parse all files into Api/Struct/Field objects (all schema errors
# are reported as file:line and make us exit 1 before anything is written),
# then emit C from those objects.  Standard library only.

import os
import re
import sys

PRIMS = {
	# type: (C type, reader, writer, min wire size, array struct name)
	'bool': ('bool', 'rd_bool', 'wr_bool', 1, 'bool_array'),
	'int8': ('int8_t', 'rd_i8', 'wr_i8', 1, 'int8_array'),
	'int16': ('int16_t', 'rd_i16', 'wr_i16', 2, 'int16_array'),
	'uint16': ('uint16_t', 'rd_u16', 'wr_u16', 2, 'uint16_array'),
	'int32': ('int32_t', 'rd_i32', 'wr_i32', 4, 'int32_array'),
	'int64': ('int64_t', 'rd_i64', 'wr_i64', 8, 'int64_array'),
	'float64': ('double', 'rd_f64', 'wr_f64', 8, 'float64_array'),
	'uuid': ('struct kuuid', None, None, 16, 'kuuid_array'),
	'string': ('struct kstr', None, None, None, 'kstr_array'),
	'bytes': ('struct bytes', None, None, None, 'bytes_array'),
	'records': ('struct krecords', None, None, None, None),
}
INT_RANGE = {
	'int8': (-2**7, 2**7 - 1), 'int16': (-2**15, 2**15 - 1),
	'uint16': (0, 2**16 - 1), 'int32': (-2**31, 2**31 - 1),
	'int64': (-2**63, 2**63 - 1),
}
NULLABLE_TYPES = ('string', 'bytes', 'records')
IDENT = re.compile(r'^[A-Za-z][A-Za-z0-9_]*$')


class SchemaError(Exception):
	def __init__(self, path, line, msg):
		super().__init__('%s:%d: %s' % (path, line, msg))


class Field:
	def __init__(self):
		self.name = None
		self.type = None        # prim name, or element type for arrays
		self.array = False
		self.struct = None      # Struct for []StructName
		self.versions = None    # (lo, hi|None) or None = never
		self.nullable = None    # same shape
		self.default = None     # raw token or None
		self.tag = None
		self.about = ''
		self.line = 0


class Struct:
	def __init__(self, name, line, top):
		self.name = name
		self.line = line
		self.top = top          # top-level request/response message
		self.fields = []


class Api:
	def __init__(self, path):
		self.path = path
		self.name = None
		self.key = None
		self.valid = None
		self.flex = None        # first flexible version or None
		self.flex_seen = False
		self.request = None
		self.response = None
		self.structs = []       # element structs, children before parents


def tokenize(text, path, lineno):
	"""Split a line into tokens; "quoted strings" are one token (kept quoted)."""
	toks = []
	i = 0
	n = len(text)
	while i < n:
		c = text[i]
		if c.isspace():
			i += 1
			continue
		if c == '#':
			break
		if c == '"':
			j = i + 1
			while j < n and text[j] != '"':
				if text[j] == '\\':
					j += 1
				j += 1
			if j >= n:
				raise SchemaError(path, lineno, 'unterminated quoted string')
			toks.append(text[i:j + 1])
			i = j + 1
			continue
		j = i
		while j < n and not text[j].isspace() and text[j] not in '#"':
			j += 1
		toks.append(text[i:j])
		i = j
	return toks


def parse_versions(tok, path, lineno, what):
	if tok == 'none':
		return None
	m = re.match(r'^(\d+)\+$', tok)
	if m:
		return (int(m.group(1)), None)
	m = re.match(r'^(\d+)-(\d+)$', tok)
	if m:
		lo, hi = int(m.group(1)), int(m.group(2))
		if hi < lo:
			raise SchemaError(path, lineno, '%s "%s": empty range' % (what, tok))
		return (lo, hi)
	m = re.match(r'^(\d+)$', tok)
	if m:
		return (int(m.group(1)), int(m.group(1)))
	raise SchemaError(path, lineno,
		'%s "%s": expected N+, N-M or none' % (what, tok))


def in_range(rng, v):
	return rng is not None and v >= rng[0] and (rng[1] is None or v <= rng[1])


def unquote(tok):
	s = tok[1:-1]
	return re.sub(r'\\(.)', r'\1', s)


def parse_field(api, toks, path, lineno, structs_seen):
	f = Field()
	f.line = lineno
	if len(toks) < 3:
		raise SchemaError(path, lineno,
			'field line needs at least "Name type versions", got "%s"' % ' '.join(toks))
	f.name = toks[0]
	if not IDENT.match(f.name):
		raise SchemaError(path, lineno, 'bad field name "%s"' % f.name)
	t = toks[1]
	if t.startswith('[]'):
		f.array = True
		t = t[2:]
	if t in PRIMS:
		f.type = t
		if f.array and PRIMS[t][4] is None:
			raise SchemaError(path, lineno, 'arrays of %s are not supported' % t)
	elif f.array and IDENT.match(t):
		if t in structs_seen:
			raise SchemaError(path, lineno,
				'struct name "%s" already used at line %d (struct names must be unique in a file)'
				% (t, structs_seen[t]))
		structs_seen[t] = lineno
		f.type = t
		f.struct = Struct(t, lineno, False)
	else:
		raise SchemaError(path, lineno, 'unknown type "%s" (expected one of %s, []type or []StructName)'
			% (toks[1], ' '.join(sorted(PRIMS))))
	f.versions = parse_versions(toks[2], path, lineno, 'versions')
	i = 3
	while i < len(toks):
		kw = toks[i]
		if kw not in ('nullable', 'default', 'tag', 'about'):
			raise SchemaError(path, lineno,
				'unexpected "%s" (expected nullable, default, tag or about)' % kw)
		if i + 1 >= len(toks):
			raise SchemaError(path, lineno, '"%s" needs a value' % kw)
		val = toks[i + 1]
		if kw == 'nullable':
			f.nullable = parse_versions(val, path, lineno, 'nullable')
		elif kw == 'default':
			f.default = val
		elif kw == 'tag':
			if not re.match(r'^\d+$', val):
				raise SchemaError(path, lineno, 'tag "%s": expected a number' % val)
			f.tag = int(val)
		else:
			if not val.startswith('"'):
				raise SchemaError(path, lineno, 'about needs a "quoted string"')
			f.about = unquote(val)
		i += 2
	check_field(api, f, path, lineno)
	return f


def check_field(api, f, path, lineno):
	if f.nullable is not None and not f.array and f.type not in NULLABLE_TYPES:
		raise SchemaError(path, lineno,
			'%s: only strings, bytes, records and arrays can be nullable' % f.name)
	if f.tag is not None:
		if api.flex is None:
			raise SchemaError(path, lineno,
				'%s: tagged field in an api without flexible versions' % f.name)
		if f.type == 'records':
			raise SchemaError(path, lineno, '%s: tagged records are not supported' % f.name)
	if f.default is None:
		return
	d = f.default
	bad = lambda why: SchemaError(path, lineno, '%s: bad default "%s": %s' % (f.name, d, why))
	if f.array:
		if d != 'null':
			raise bad('arrays only take default null')
	elif f.type == 'bool':
		if d not in ('true', 'false'):
			raise bad('expected true or false')
	elif f.type in INT_RANGE:
		try:
			v = int(d, 0)
		except ValueError:
			raise bad('expected an integer')
		lo, hi = INT_RANGE[f.type]
		if v < lo or v > hi:
			raise bad('out of range for %s' % f.type)
	elif f.type == 'float64':
		try:
			float(d)
		except ValueError:
			raise bad('expected a number')
	elif f.type == 'string':
		if d != 'null' and not d.startswith('"'):
			raise bad('expected null or a "quoted string"')
	elif f.type in ('bytes', 'records'):
		if d != 'null':
			raise bad('bytes/records only take default null')
	else:
		raise bad('%s fields take no default' % f.type)
	if d == 'null' and f.nullable is None:
		raise bad('null default on a field that is never nullable')


def parse_file(path):
	api = Api(path)
	base = os.path.basename(path)[:-4]
	structs_seen = {}
	section = None          # Struct of the current request/response
	stack = []              # stack[k] = Struct receiving fields at level k+1
	with open(path, encoding='utf-8') as fp:
		lines = fp.read().split('\n')
	for lineno, raw in enumerate(lines, 1):
		if '\t' in raw[:len(raw) - len(raw.lstrip())]:
			raise SchemaError(path, lineno, 'indent with spaces (2 per level), not tabs')
		toks = tokenize(raw, path, lineno)
		if not toks:
			continue
		indent = len(raw) - len(raw.lstrip(' '))
		if indent == 0:
			kw = toks[0]
			if kw == 'api':
				if len(toks) != 3 or not IDENT.match(toks[1]) or not toks[2].isdigit():
					raise SchemaError(path, lineno, 'expected "api Name key"')
				if api.name is not None:
					raise SchemaError(path, lineno, 'second "api" line')
				api.name = toks[1]
				api.key = int(toks[2])
				if api.name != base:
					raise SchemaError(path, lineno,
						'api name "%s" does not match file name %s.api' % (api.name, base))
			elif kw == 'valid':
				if len(toks) != 2:
					raise SchemaError(path, lineno, 'expected "valid N-M"')
				api.valid = parse_versions(toks[1], path, lineno, 'valid')
				if api.valid is None or api.valid[1] is None:
					raise SchemaError(path, lineno, 'valid needs a closed range N-M')
			elif kw == 'flexible':
				if len(toks) != 2:
					raise SchemaError(path, lineno, 'expected "flexible N+" or "flexible none"')
				v = parse_versions(toks[1], path, lineno, 'flexible')
				if v is not None and v[1] is not None:
					raise SchemaError(path, lineno, 'flexible takes "N+" or "none"')
				api.flex = v[0] if v else None
				api.flex_seen = True
			elif kw in ('request', 'response'):
				if len(toks) != 1:
					raise SchemaError(path, lineno, 'unexpected text after "%s"' % kw)
				if api.name is None or api.valid is None or not api.flex_seen:
					raise SchemaError(path, lineno,
						'"api", "valid" and "flexible" must come before "%s"' % kw)
				if getattr(api, kw) is not None:
					raise SchemaError(path, lineno, 'second "%s" section' % kw)
				section = Struct(api.name + kw.capitalize(), lineno, True)
				setattr(api, kw, section)
				stack = [section]
			else:
				raise SchemaError(path, lineno,
					'unknown directive "%s" (field lines must be indented)' % kw)
			continue
		if section is None:
			raise SchemaError(path, lineno, 'field outside a request/response section')
		if indent % 2:
			raise SchemaError(path, lineno, 'indentation must be a multiple of 2 spaces')
		level = indent // 2
		if level > len(stack):
			raise SchemaError(path, lineno,
				'indented too far (no struct array field above to nest under)')
		del stack[level:]
		parent = stack[level - 1]
		f = parse_field(api, toks, path, lineno, structs_seen)
		if any(o.name == f.name for o in parent.fields):
			raise SchemaError(path, lineno, 'duplicate field "%s" in %s' % (f.name, parent.name))
		if f.tag is not None and any(o.tag == f.tag for o in parent.fields):
			raise SchemaError(path, lineno, 'duplicate tag %d in %s' % (f.tag, parent.name))
		parent.fields.append(f)
		if f.struct is not None:
			stack.append(f.struct)
	if api.name is None:
		raise SchemaError(path, 1, 'missing "api Name key" line')
	for kw in ('request', 'response'):
		if getattr(api, kw) is None:
			raise SchemaError(path, len(lines), 'missing "%s" section' % kw)
	for name in (api.request.name, api.response.name):
		if name in structs_seen:
			raise SchemaError(path, structs_seen[name],
				'struct name "%s" clashes with the message struct' % name)

	def collect(s):
		for f in s.fields:
			if f.struct is not None:
				if not f.struct.fields:
					raise SchemaError(path, f.line,
						'%s: struct array without indented fields' % f.name)
				collect(f.struct)
				api.structs.append(f.struct)
	collect(api.request)
	collect(api.response)
	return api


# ---------------------------------------------------------------- C helpers

def vcond(rng):
	"""C condition for 'version in rng'; None means always."""
	if rng is None:
		return 'false'
	parts = []
	if rng[0] > 0:
		parts.append('version >= %d' % rng[0])
	if rng[1] is not None:
		parts.append('version <= %d' % rng[1])
	return ' && '.join(parts) if parts else None


def cond_and(*cs):
	cs = [c for c in cs if c is not None]
	if 'false' in cs:
		return 'false'
	if not cs:
		return None
	if len(cs) == 1:
		return cs[0]
	return ' && '.join('(%s)' % c if ' ' in c else c for c in cs)


def bool_expr(c):
	return 'true' if c is None else c


def flex_expr(api):
	return 'false' if api.flex is None else 'version >= %d' % api.flex


def c_str(s):
	return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def comment(s):
	return s.replace('*/', '* /')


def ctype(f):
	if f.struct is not None:
		return 'struct %s_array' % f.struct.name
	if f.array:
		return 'struct %s' % PRIMS[f.type][4]
	return PRIMS[f.type][0]


def int_lit(t, v):
	if t == 'int64':
		if v == -2**63:
			return 'INT64_MIN'
		return 'INT64_C(%d)' % v
	if t == 'int32' and v == -2**31:
		return 'INT32_MIN'
	return '%d' % v


def default_c(f):
	"""C expression of the default value (None when all-zero)."""
	d = f.default
	if f.array:
		return '-1' if d == 'null' else None       # value of .n
	if d is None:
		return None
	t = f.type
	if t == 'bool':
		return 'true' if d == 'true' else None
	if t in INT_RANGE:
		v = int(d, 0)
		return int_lit(t, v) if v else None
	if t == 'float64':
		return None if float(d) == 0 else repr(float(d))
	if t == 'string':
		if d == 'null':
			return 'KSTR_NULL'
		s = unquote(d)
		return '((struct kstr){ %s, %d })' % (c_str(s), len(s.encode()))
	if t in ('bytes', 'records'):
		return '-1'                                 # value of .len
	return None


def nondefault_cond(f, lv):
	"""C condition: the tagged field lv differs from its default."""
	d = default_c(f)
	if f.array:
		return '%s.n != %s' % (lv, d or '0')
	t = f.type
	if t == 'string':
		return '!kstr_eq(%s, %s)' % (lv, d or '((struct kstr){ NULL, 0 })')
	if t == 'bytes':
		return '%s.len != %s' % (lv, d or '0')
	if t == 'uuid':
		return '!proto_uuid_is_zero(&%s)' % lv
	if t == 'bool':
		return '%s != %s' % (lv, d or 'false')
	if t == 'float64':
		return '%s != %s' % (lv, d or '0.0')
	return '%s != %s' % (lv, d or '0')


def min_size(t, flex):
	if t in ('string',):
		return 1 if flex else 2
	if t in ('bytes', 'records'):
		return 1 if flex else 4
	return PRIMS[t][3]


def struct_min(api, s):
	"""(min bytes of one element in flexible versions, in other versions)."""
	res = {True: None, False: None}
	for v in range(api.valid[0], api.valid[1] + 1):
		flex = api.flex is not None and v >= api.flex
		n = 1 if flex else 0
		for f in s.fields:
			if f.tag is not None or not in_range(f.versions, v):
				continue
			if f.array:
				n += 1 if flex else 4
			else:
				n += min_size(f.type, flex)
		if res[flex] is None or n < res[flex]:
			res[flex] = n
	a = max(res[True] or 1, 1)
	b = max(res[False] or 1, 1)
	return a, b


def elem_min_expr(api, f):
	if f.struct is not None:
		a, b = struct_min(api, f.struct)
	else:
		a, b = min_size(f.type, True), min_size(f.type, False)
	return str(a) if a == b else '(flex ? %d : %d)' % (a, b)


def fn_name(s, verb):
	return '%s_%s' % (s.name, verb)


# ---------------------------------------------------------------- decode

def read_value(f, t, lv, rd, nullc, out):
	"""Append C lines reading one value of prim type t into lvalue lv."""
	if t == 'uuid':
		out.append('rd_uuid(%s, &%s);' % (rd, lv))
	elif t == 'string':
		out.append('proto_rd_str(%s, flex, %s, &%s);' % (rd, nullc, lv))
	elif t == 'bytes':
		out.append('proto_rd_bytes(%s, flex, %s, &%s);' % (rd, nullc, lv))
	elif t == 'records':
		out.append('proto_rd_records(%s, flex, %s, &%s);' % (rd, nullc, lv))
	else:
		out.append('%s = %s(%s);' % (lv, PRIMS[t][1], rd))


def read_field(api, f, rd, out):
	lv = 'm->' + f.name
	nullc = bool_expr(vcond(f.nullable)) if f.nullable else 'false'
	if not f.array:
		read_value(f, f.type, lv, rd, nullc, out)
		return
	out.append('%s.n = proto_rd_arrlen(%s, flex, %s, %s);' % (lv, rd, nullc, elem_min_expr(api, f)))
	out.append('%s.v = proto_alloc(%s, a, &%s.n, sizeof(*%s.v));' % (lv, rd, lv, lv))
	body = []
	if f.struct is not None:
		body.append('%s(%s, a, version, &%s.v[i]);' % (fn_name(f.struct, 'read'), rd, lv))
	else:
		read_value(f, f.type, '%s.v[i]' % lv, rd, 'false', body)
	err = 'r->err' if rd == 'r' else rd.lstrip('&') + '.err'
	out.append('for (int32_t i = 0; i < %s.n && !%s; i++)' % (lv, err))
	out.extend('\t' + b for b in body)


def gen_read(api, s):
	body = []
	body.append('%s(m);' % fn_name(s, 'init'))
	for f in s.fields:
		if f.tag is not None:
			continue
		c = vcond(f.versions)
		if c == 'false':
			continue
		lines = []
		read_field(api, f, 'r', lines)
		emit_guarded(body, c, lines)
	tagged = sorted((f for f in s.fields if f.tag is not None and f.versions is not None),
		key=lambda f: f.tag)
	if not tagged:
		body.append('if (flex)')
		body.append('\tproto_rd_skip_tags(r);')
	else:
		body.append('if (flex) {')
		body.append('\tuint32_t ntag = rd_uvarint(r);')
		body.append('')
		body.append('\tfor (uint32_t k = 0; k < ntag && !r->err; k++) {')
		body.append('\t\tuint32_t tag = rd_uvarint(r);')
		body.append('\t\tstruct bytes b;')
		body.append('\t\tstruct rd t;')
		body.append('')
		body.append('\t\tif (!rd_view(r, rd_uvarint(r), &b))')
		body.append('\t\t\tbreak;')
		body.append('\t\trd_init(&t, b.p, (size_t)b.len);')
		body.append('\t\tswitch (tag) {')
		for f in tagged:
			body.append('\t\tcase %d:' % f.tag)
			lines = []
			read_field(api, f, '&t', lines)
			lines.append('proto_rd_done(r, &t);')
			inner = []
			emit_guarded(inner, vcond(f.versions), lines)
			body.extend('\t\t\t' + x for x in inner)
			body.append('\t\t\tbreak;')
		body.append('\t\tdefault:')
		body.append('\t\t\tbreak;')
		body.append('\t\t}')
		body.append('\t}')
		body.append('}')
	return body


def emit_guarded(out, c, lines):
	if c is None:
		out.extend(lines)
	elif len(lines) == 1:
		out.append('if (%s)' % c)
		out.append('\t' + lines[0])
	else:
		out.append('if (%s) {' % c)
		out.extend('\t' + x for x in lines)
		out.append('}')


# ---------------------------------------------------------------- encode

def write_value(t, lv, w, out):
	if t == 'uuid':
		out.append('wr_uuid(%s, &%s);' % (w, lv))
	elif t == 'string':
		out.append('proto_wr_str(%s, flex, %s);' % (w, lv))
	elif t == 'bytes':
		out.append('proto_wr_bytes(%s, flex, %s);' % (w, lv))
	elif t == 'records':
		out.append('proto_wr_records(%s, flex, &%s);' % (w, lv))
	else:
		out.append('%s(%s, %s);' % (PRIMS[t][2], w, lv))


def write_field(f, w, out):
	lv = 'm->' + f.name
	if not f.array:
		write_value(f.type, lv, w, out)
		return
	out.append('proto_wr_arrlen(%s, flex, %s.n);' % (w, lv))
	body = []
	if f.struct is not None:
		body.append('%s(%s, version, &%s.v[i]);' % (fn_name(f.struct, 'write'), w, lv))
	else:
		write_value(f.type, '%s.v[i]' % lv, w, body)
	out.append('for (int32_t i = 0; i < %s.n; i++)' % lv)
	out.extend('\t' + b for b in body)


def gen_write(api, s):
	body = []
	for f in s.fields:
		if f.tag is not None:
			continue
		c = vcond(f.versions)
		if c == 'false':
			continue
		lines = []
		write_field(f, 'w', lines)
		emit_guarded(body, c, lines)
	tagged = sorted((f for f in s.fields if f.tag is not None and f.versions is not None),
		key=lambda f: f.tag)
	if not tagged:
		body.append('if (flex)')
		body.append('\twr_uvarint(w, 0);')
		return body
	body.append('if (flex) {')
	body.append('\tuint32_t ntag = 0;')
	body.append('')
	conds = []
	for f in tagged:
		c = cond_and(vcond(f.versions), nondefault_cond(f, 'm->' + f.name))
		conds.append(c)
		body.append('\tif (%s)' % c)
		body.append('\t\tntag++;')
	body.append('\twr_uvarint(w, ntag);')
	for f, c in zip(tagged, conds):
		body.append('\tif (%s) {' % c)
		body.append('\t\tstruct wr t;')
		body.append('')
		body.append('\t\twr_init(&t);')
		lines = []
		write_field(f, '&t', lines)
		body.extend('\t\t' + x for x in lines)
		body.append('\t\tproto_wr_tagged(w, %d, &t);' % f.tag)
		body.append('\t}')
	body.append('}')
	return body


# ---------------------------------------------------------------- error codes

def is_err_field(f):
	return f.type == 'int16' and not f.array and f.name.endswith('ErrorCode') and f.versions is not None


def has_errs(s):
	return any(is_err_field(f) or (f.struct is not None and has_errs(f.struct)) for f in s.fields)


def gen_errors(s):
	"""Body calling fn for each error code field of m present in version, nested arrays included."""
	body = []
	for f in s.fields:
		c = vcond(f.versions)
		if c == 'false':
			continue
		lines = []
		if is_err_field(f):
			lines.append('fn(arg, m->%s);' % f.name)
		elif f.struct is not None and has_errs(f.struct):
			lines.append('for (int32_t i = 0; i < m->%s.n; i++)' % f.name)
			lines.append('\t%s(&m->%s.v[i], version, fn, arg);' % (fn_name(f.struct, 'errors'), f.name))
		if lines:
			emit_guarded(body, c, lines)
	return body


def error_structs(api):
	"""The response's element structs holding error codes, children first, then the response."""
	out = []

	def walk(s):
		for f in s.fields:
			if f.struct is not None and has_errs(f.struct) and f.struct not in out:
				walk(f.struct)
		if s not in out:
			out.append(s)
	if has_errs(api.response):
		walk(api.response)
	return out


# ---------------------------------------------------------------- init, sample

def gen_init(s):
	body = ['memset(m, 0, sizeof(*m));']
	for f in s.fields:
		d = default_c(f)
		if d is None:
			continue
		if f.array:
			body.append('m->%s.n = %s;' % (f.name, d))
		elif f.type in ('bytes', 'records'):
			body.append('m->%s.len = %s;' % (f.name, d))
		else:
			body.append('m->%s = %s;' % (f.name, d))
	return body


def name_hash(s):
	h = 0
	for ch in s:
		h = (h * 31 + ord(ch)) % 1000
	return h


def sample_value(f, t, lv, seed, out):
	base = name_hash(f.name) + 3
	d = default_c(f) if not f.array else None
	if t == 'bool':
		out.append('%s = %s;' % (lv, 'false' if d == 'true' else 'true'))
	elif t in INT_RANGE:
		ct = PRIMS[t][0]
		if t == 'int64':
			out.append('%s = (int64_t)(INT64_C(0x100000000) * %d + %s);' % (lv, base, seed))
		else:
			out.append('%s = (%s)(%d + %s);' % (lv, ct, base, seed))
		out.append('if (%s == %s)' % (lv, d or '0'))
		out.append('\t%s = (%s)(%s + 1);' % (lv, ct, lv))
	elif t == 'float64':
		out.append('%s = (double)(%d + %s) + 0.5;' % (lv, base, seed))
	elif t == 'uuid':
		out.append('proto_sample_uuid(&%s, %s);' % (lv, seed))
	elif t == 'string':
		out.append('%s = proto_sample_str(a, %s, %s);' % (lv, c_str(f.name), seed))
	elif t == 'bytes':
		out.append('%s = proto_sample_bytes(a, %s);' % (lv, seed))
	elif t == 'records':
		out.append('%s = proto_sample_records(a, %s);' % (lv, seed))


def sample_field(f, out):
	lv = 'm->' + f.name
	nullc = vcond(f.nullable) if f.nullable else 'false'
	lines = []
	if f.array:
		lines.append('%s.n = (int32_t)(1 + seed %% 2);' % lv)
		lines.append('%s.v = arena_calloc(a, (size_t)%s.n, sizeof(*%s.v));' % (lv, lv, lv))
		if f.struct is not None:
			lines.append('for (int32_t i = 0; i < %s.n; i++)' % lv)
			lines.append('\t%s(&%s.v[i], a, version, seed + (unsigned)i + 1);'
				% (fn_name(f.struct, 'sample'), lv))
		else:
			inner = []
			sample_value(f, f.type, '%s.v[i]' % lv, 'seed + (unsigned)i', inner)
			lines.append('for (int32_t i = 0; i < %s.n; i++) {' % lv)
			lines.extend('\t' + x for x in inner)
			lines.append('}')
	else:
		sample_value(f, f.type, lv, 'seed', lines)
	if nullc == 'false':
		out.extend(lines)
		return
	nc = cond_and(nullc, 'seed % 3 == 2')
	out.append('if (%s) {' % nc)
	if f.array:
		out.append('\t%s.n = -1;' % lv)
	elif f.type == 'string':
		out.append('\t%s = KSTR_NULL;' % lv)
	else:
		out.append('\t%s.len = -1;' % lv)
	out.append('} else {')
	out.extend('\t' + x for x in lines)
	out.append('}')


def gen_sample(s):
	body = ['%s(m);' % fn_name(s, 'init')]
	for f in s.fields:
		c = vcond(f.versions)
		if f.tag is not None:
			c = cond_and('flex', c)
		if c == 'false':
			continue
		lines = []
		sample_field(f, lines)
		emit_guarded(body, c, lines)
	return body


def function(out, sig, body, params):
	"""Emit a C function; locals flex/unused params handled here."""
	text = '\n'.join(body)
	out.append(sig)
	out.append('{')
	pre = []
	for name, decl in params:
		if decl is None:
			text = '\n'.join(pre) + '\n' + text
		used = re.search(r'\b%s\b' % name, text) is not None
		if decl is not None:
			if used:
				pre.append(decl)
		elif not used:
			pre.append('(void)%s;' % name)
	if pre:
		out.extend('\t' + p for p in pre)
		if any(p.startswith('const') for p in pre):
			out.append('')
	for line in body:
		out.append('\t' + line if line else '')
	out.append('}')
	out.append('')


# ---------------------------------------------------------------- output

HEADER_PRELUDE = '''/*
 * proto_msgs.h - GENERATED by src/proto/gen.py from src/proto/schema/<Name>.api.
 * Do not edit; see docs/schema-format.md.
 *
 * One C struct per request, response and array element, with field names
 * kept in Kafka's CamelCase ("wire data").  Decoded strings, bytes and
 * records are views into the request frame; arrays come from the arena.
 * Decoders return 0 or -EBADMSG (r->err set); encoders append to a struct wr
 * whose err is checked once afterwards.  Fields outside their versions are
 * set to their defaults by decoders and skipped by encoders.
 */
#ifndef GREGOR_PROTO_MSGS_H
#define GREGOR_PROTO_MSGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/buf.h"

/* A records field: memory bytes, or (file.ref != NULL) a file slice. */
struct krecords {
	const uint8_t *p;   /* memory bytes (decoded requests, or built responses) */
	int32_t len;        /* -1 = null */
	struct fslice file; /* if file.ref != NULL the bytes are this file slice instead */
};

/* Arrays of primitives; n == -1 means null. */
struct bool_array { bool *v; int32_t n; };
struct int8_array { int8_t *v; int32_t n; };
struct int16_array { int16_t *v; int32_t n; };
struct uint16_array { uint16_t *v; int32_t n; };
struct int32_array { int32_t *v; int32_t n; };
struct int64_array { int64_t *v; int32_t n; };
struct float64_array { double *v; int32_t n; };
struct kuuid_array { struct kuuid *v; int32_t n; };
struct kstr_array { struct kstr *v; int32_t n; };
struct bytes_array { struct bytes *v; int32_t n; };
'''

C_PRELUDE = r'''/*
 * proto_msgs.c - GENERATED by src/proto/gen.py from src/proto/schema/<Name>.api.
 * Do not edit; see docs/schema-format.md for the wire rules applied here.
 */
#include "proto_msgs.h"

#include <errno.h>
#include <string.h>

/* ---- shared wire helpers ---- */

static inline bool proto_uuid_is_zero(const struct kuuid *u)
{
	for (int i = 0; i < 16; i++)
		if (u->b[i])
			return false;
	return true;
}

/* Length of a string/bytes/records: -1 null, else the length. */
static inline int32_t proto_rd_len(struct rd *r, bool flex, bool nullable, bool i16)
{
	int32_t n;

	if (flex) {
		uint32_t u = rd_uvarint(r);

		if (u > (uint32_t)INT32_MAX) {
			rd_fail(r, RD_INVALID);
			return 0;
		}
		n = (int32_t)u - 1;
	} else {
		n = i16 ? rd_i16(r) : rd_i32(r);
	}
	if (r->err)
		return 0;
	if (n < -1 || (n == -1 && !nullable)) {
		rd_fail(r, RD_INVALID);
		return 0;
	}
	return n;
}

static inline void proto_rd_str(struct rd *r, bool flex, bool nullable, struct kstr *out)
{
	int32_t n = proto_rd_len(r, flex, nullable, true);
	struct bytes b;

	if (n < 0 && !r->err) {
		*out = KSTR_NULL;
		return;
	}
	rd_view(r, (size_t)n, &b);
	out->p = (const char *)b.p;
	out->len = b.len;
}

static inline void proto_rd_bytes(struct rd *r, bool flex, bool nullable, struct bytes *out)
{
	int32_t n = proto_rd_len(r, flex, nullable, false);

	if (n < 0 && !r->err) {
		out->p = NULL;
		out->len = -1;
		return;
	}
	rd_view(r, (size_t)n, out);
}

static inline void proto_rd_records(struct rd *r, bool flex, bool nullable, struct krecords *out)
{
	struct bytes b;

	proto_rd_bytes(r, flex, nullable, &b);
	memset(out, 0, sizeof(*out));
	out->p = b.p;
	out->len = b.len;
}

/* An array count, checked against the bytes left (rd_count). */
static inline int32_t proto_rd_arrlen(struct rd *r, bool flex, bool nullable, size_t elem_min)
{
	int32_t n;

	if (flex) {
		uint32_t u = rd_uvarint(r);

		if (u > (uint32_t)INT32_MAX) {
			rd_fail(r, RD_INVALID);
			return 0;
		}
		n = (int32_t)u - 1;
	} else {
		n = rd_i32(r);
	}
	return rd_count(r, n, elem_min, nullable);
}

/* Arena array for *n elements; on failure fails r and sets *n = 0. */
static inline void *proto_alloc(struct rd *r, struct arena *a, int32_t *n, size_t size)
{
	void *p;

	if (*n <= 0 || r->err)
		return NULL;
	p = arena_calloc(a, (size_t)*n, size);
	if (!p) {
		rd_fail(r, RD_INVALID);
		*n = 0;
	}
	return p;
}

static inline void proto_rd_skip_tags(struct rd *r)
{
	uint32_t ntag = rd_uvarint(r);

	for (uint32_t k = 0; k < ntag && !r->err; k++) {
		rd_uvarint(r);
		rd_skip(r, rd_uvarint(r));
	}
}

/* A known tagged field must fill exactly its size. */
static inline void proto_rd_done(struct rd *r, struct rd *t)
{
	if (t->err || rd_left(t))
		rd_fail(r, RD_INVALID);
}

static inline void proto_wr_len(struct wr *w, bool flex, int32_t n, bool i16)
{
	if (flex)
		wr_uvarint(w, (uint32_t)(n < 0 ? 0 : n + 1));
	else if (i16)
		wr_i16(w, (int16_t)(n < 0 ? -1 : n));
	else
		wr_i32(w, n < 0 ? -1 : n);
}

static inline void proto_wr_str(struct wr *w, bool flex, struct kstr s)
{
	proto_wr_len(w, flex, s.len, true);
	if (s.len > 0)
		wr_raw(w, s.p, (size_t)s.len);
}

static inline void proto_wr_bytes(struct wr *w, bool flex, struct bytes b)
{
	proto_wr_len(w, flex, b.len, false);
	if (b.len > 0)
		wr_raw(w, b.p, (size_t)b.len);
}

/* File-backed records: the length prefix here, the bytes by sendfile later. */
static inline void proto_wr_records(struct wr *w, bool flex, const struct krecords *rec)
{
	if (rec->file.ref) {
		proto_wr_len(w, flex, (int32_t)rec->file.len, false);
		wr_file(w, &rec->file);
		return;
	}
	proto_wr_len(w, flex, rec->len, false);
	if (rec->len > 0)
		wr_raw(w, rec->p, (size_t)rec->len);
}

static inline void proto_wr_arrlen(struct wr *w, bool flex, int32_t n)
{
	proto_wr_len(w, flex, n, false);
}

/* Appends tagged field tag whose value was encoded into t; releases t. */
static inline void proto_wr_tagged(struct wr *w, uint32_t tag, struct wr *t)
{
	if (t->err && !w->err)
		w->err = t->err;
	wr_uvarint(w, tag);
	wr_uvarint(w, (uint32_t)t->len);
	if (t->len)
		wr_raw(w, t->buf, t->len);
	wr_release(t);
}
'''

SAMPLE_C_PRELUDE = r'''/*
 * proto_sample.c - GENERATED by src/proto/gen.py: test support only.
 *
 * <Msg>_sample() fills every field that exists in a version with a
 * deterministic, non-default value derived from seed (seed % 3 == 2 makes
 * nullable fields null where that version allows it).  Not linked into the
 * broker: tests #include this file.
 */
#include "proto_sample.h"

#include <stdio.h>
#include <string.h>

static inline struct kstr proto_sample_str(struct arena *a, const char *name, unsigned seed)
{
	char tmp[128];
	int n = snprintf(tmp, sizeof(tmp), "%s-%u", name, seed);
	char *p = arena_strndup(a, tmp, (size_t)n);

	return (struct kstr){ p, n };
}

static inline struct bytes proto_sample_bytes(struct arena *a, unsigned seed)
{
	int32_t n = (int32_t)(1 + seed % 3);
	uint8_t *p = arena_alloc(a, (size_t)n);

	for (int32_t i = 0; i < n; i++)
		p[i] = (uint8_t)(0xa0 + seed + (unsigned)i);
	return (struct bytes){ p, n };
}

static inline struct krecords proto_sample_records(struct arena *a, unsigned seed)
{
	struct bytes b = proto_sample_bytes(a, seed + 4);
	struct krecords rec;

	memset(&rec, 0, sizeof(rec));
	rec.p = b.p;
	rec.len = b.len;
	return rec;
}

static inline void proto_sample_uuid(struct kuuid *u, unsigned seed)
{
	for (int i = 0; i < 16; i++)
		u->b[i] = (uint8_t)(seed * 7 + (unsigned)i + 1);
}
'''


def gen_header(apis, maxkey):
	out = [HEADER_PRELUDE]
	out.append('enum api_key {')
	for api in sorted(apis, key=lambda a: a.key):
		out.append('\tAPI_%s = %d,' % (api.name, api.key))
	out.append('\tAPI_COUNT = %d' % (maxkey + 1))
	out.append('};')
	out.append('')
	for api in sorted(apis, key=lambda a: a.key):
		out.append('/* ---- %s (key %d, versions %d-%d, flexible %s) ---- */' % (
			api.name, api.key, api.valid[0], api.valid[1],
			'%d+' % api.flex if api.flex is not None else 'none'))
		out.append('')
		for s in api.structs + [api.request, api.response]:
			out.append('struct %s {' % s.name)
			for f in s.fields:
				notes = []
				if f.versions is None:
					notes.append('never on the wire')
				else:
					notes.append('v%d%s' % (f.versions[0], '+' if f.versions[1] is None
						else '-%d' % f.versions[1]))
				if f.nullable:
					notes.append('nullable v%d%s' % (f.nullable[0], '+' if f.nullable[1] is None
						else '-%d' % f.nullable[1]))
				if f.tag is not None:
					notes.append('tag %d' % f.tag)
				if f.default is not None:
					notes.append('default %s' % f.default)
				txt = ', '.join(notes)
				if f.about:
					txt += ': ' + f.about
				out.append('\t%s %s; /* %s */' % (ctype(f), f.name, comment(txt)))
			out.append('};')
			if not s.top:
				out.append('struct %s_array { struct %s *v; int32_t n; };' % (s.name, s.name))
				out.append('void %s_init(struct %s *m);' % (s.name, s.name))
			out.append('')
		for s in (api.request, api.response):
			n = s.name
			out.append('int %s_decode(struct rd *r, struct arena *a, int16_t version, struct %s *out);' % (n, n))
			out.append('void %s_encode(struct wr *w, int16_t version, const struct %s *in);' % (n, n))
			out.append('void %s_init(struct %s *m);' % (n, n))
		out.append('')
	out.append('''typedef void proto_err_fn(void *arg, int16_t error_code);

/* The table, indexed by api key; name NULL for keys without a schema. */
struct proto_api {
	const char *name;
	int16_t min, max;           /* from "valid" */
	int16_t flex_min;           /* first flexible version, or INT16_MAX */
	size_t req_size, resp_size; /* sizeof the structs */
	void (*req_init)(void *);
	void (*resp_init)(void *);
	int (*req_decode)(struct rd *, struct arena *, int16_t, void *);
	int (*resp_decode)(struct rd *, struct arena *, int16_t, void *);
	void (*req_encode)(struct wr *, int16_t, const void *);
	void (*resp_encode)(struct wr *, int16_t, const void *);
	int16_t throttle_min;       /* first version with a ThrottleTimeMs field, -1 if none */
	size_t throttle_off;        /* offsetof the response's ThrottleTimeMs */
	/* calls fn for every *ErrorCode field of a response of this version, nested ones included; NULL: none */
	void (*resp_errors)(const void *m, int16_t version, proto_err_fn *fn, void *arg);
};
extern const struct proto_api proto_apis[API_COUNT];

/*
 * True if (key, version) is a known, valid and flexible version (request
 * header v2, compact encodings).  Unknown keys and versions outside
 * min..max are false.
 */
static inline bool proto_is_flexible(int16_t key, int16_t version)
{
	const struct proto_api *api;

	if (key < 0 || key >= API_COUNT || !proto_apis[key].name)
		return false;
	api = &proto_apis[key];
	return version >= api->min && version <= api->max && version >= api->flex_min;
}

#endif''')
	return '\n'.join(out) + '\n'


def gen_source(apis, maxkey):
	out = [C_PRELUDE]
	for api in sorted(apis, key=lambda a: a.key):
		out.append('/* ---- %s ---- */' % api.name)
		out.append('')
		flex = 'const bool flex = %s;' % flex_expr(api)
		# element structs: init (exported), then read/write (static) children first
		for s in api.structs + [api.request, api.response]:
			function(out, 'void %s(struct %s *m)' % (fn_name(s, 'init'), s.name), gen_init(s), [])
		for s in api.structs + [api.request, api.response]:
			function(out, 'static void %s(struct rd *r, struct arena *a, int16_t version, struct %s *m)'
				% (fn_name(s, 'read'), s.name), gen_read(api, s),
				[('flex', flex), ('a', None), ('version', None)])
			function(out, '%svoid %s(struct wr *w, int16_t version, const struct %s *m)'
				% ('static ' if not s.top else '', fn_name(s, 'write' if not s.top else 'encode'),
					s.name), gen_write(api, s),
				[('flex', flex), ('version', None)])
		for s in error_structs(api):
			function(out, 'static void %s(const struct %s *m, int16_t version, proto_err_fn *fn, void *arg)'
				% (fn_name(s, 'errors'), s.name), gen_errors(s), [('version', None)])
		if has_errs(api.response):
			out.append('static void %s_errors_v(const void *m, int16_t v, proto_err_fn *fn, void *arg)'
				% api.response.name)
			out.append('{')
			out.append('\t%s(m, v, fn, arg);' % fn_name(api.response, 'errors'))
			out.append('}')
			out.append('')
		for s in (api.request, api.response):
			n = s.name
			out.append('int %s_decode(struct rd *r, struct arena *a, int16_t version, struct %s *out)' % (n, n))
			out.append('{')
			out.append('\t%s_read(r, a, version, out);' % n)
			out.append('\treturn r->err ? -EBADMSG : 0;')
			out.append('}')
			out.append('')
			out.append('static void %s_init_v(void *m) { %s_init(m); }' % (n, n))
			out.append('static int %s_decode_v(struct rd *r, struct arena *a, int16_t v, void *m)'
				% n)
			out.append('{')
			out.append('\treturn %s_decode(r, a, v, m);' % n)
			out.append('}')
			out.append('static void %s_encode_v(struct wr *w, int16_t v, const void *m)' % n)
			out.append('{')
			out.append('\t%s_encode(w, v, m);' % n)
			out.append('}')
			out.append('')
	# the write helper for top-level structs is named _encode; element
	# writers reference fn_name(s, 'write') only for element structs.
	out.append('const struct proto_api proto_apis[API_COUNT] = {')
	for api in sorted(apis, key=lambda a: a.key):
		q, p = api.request.name, api.response.name
		out.append('\t[API_%s] = {' % api.name)
		out.append('\t\t.name = "%s",' % api.name)
		out.append('\t\t.min = %d,' % api.valid[0])
		out.append('\t\t.max = %d,' % api.valid[1])
		out.append('\t\t.flex_min = %s,' % (api.flex if api.flex is not None else 'INT16_MAX'))
		out.append('\t\t.req_size = sizeof(struct %s),' % q)
		out.append('\t\t.resp_size = sizeof(struct %s),' % p)
		out.append('\t\t.req_init = %s_init_v,' % q)
		out.append('\t\t.resp_init = %s_init_v,' % p)
		out.append('\t\t.req_decode = %s_decode_v,' % q)
		out.append('\t\t.resp_decode = %s_decode_v,' % p)
		out.append('\t\t.req_encode = %s_encode_v,' % q)
		out.append('\t\t.resp_encode = %s_encode_v,' % p)
		thr = [f for f in api.response.fields if f.name == 'ThrottleTimeMs' and f.type == 'int32' and not f.array]
		if thr and thr[0].versions:
			out.append('\t\t.throttle_min = %d,' % thr[0].versions[0])
			out.append('\t\t.throttle_off = offsetof(struct %s, ThrottleTimeMs),' % p)
		else:
			out.append('\t\t.throttle_min = -1,')
		if has_errs(api.response):
			out.append('\t\t.resp_errors = %s_errors_v,' % p)
		out.append('\t},')
	out.append('};')
	return '\n'.join(out) + '\n'


def gen_sample_header(apis):
	out = ['''/*
 * proto_sample.h - GENERATED by src/proto/gen.py: test support only.
 * <Msg>_sample() fills m for version with deterministic non-default values
 * (memory from a); see proto_sample.c.
 */
#ifndef GREGOR_PROTO_SAMPLE_H
#define GREGOR_PROTO_SAMPLE_H

#include "proto_msgs.h"
''']
	for api in sorted(apis, key=lambda a: a.key):
		for s in (api.request, api.response):
			out.append('void %s_sample(struct %s *m, struct arena *a, int16_t version, unsigned seed);'
				% (s.name, s.name))
	out.append('''
/* Indexed by api key like proto_apis; NULL where there is no schema. */
struct proto_sample_api {
	void (*req_sample)(void *, struct arena *, int16_t, unsigned);
	void (*resp_sample)(void *, struct arena *, int16_t, unsigned);
};
extern const struct proto_sample_api proto_samples[API_COUNT];

#endif''')
	return '\n'.join(out) + '\n'


def gen_sample_source(apis):
	out = [SAMPLE_C_PRELUDE]
	for api in sorted(apis, key=lambda a: a.key):
		flex = 'const bool flex = %s;' % flex_expr(api)
		for s in api.structs + [api.request, api.response]:
			function(out, '%svoid %s(struct %s *m, struct arena *a, int16_t version, unsigned seed)'
				% ('static ' if not s.top else '', fn_name(s, 'sample'), s.name), gen_sample(s),
				[('flex', flex), ('a', None), ('version', None), ('seed', None)])
		for s in (api.request, api.response):
			out.append('static void %s_sample_v(void *m, struct arena *a, int16_t v, unsigned seed)'
				% s.name)
			out.append('{')
			out.append('\t%s_sample(m, a, v, seed);' % s.name)
			out.append('}')
			out.append('')
	out.append('const struct proto_sample_api proto_samples[API_COUNT] = {')
	for api in sorted(apis, key=lambda a: a.key):
		out.append('\t[API_%s] = { %s_sample_v, %s_sample_v },'
			% (api.name, api.request.name, api.response.name))
	out.append('};')
	return '\n'.join(out) + '\n'


def write_if_changed(path, text):
	# always rewritten (not only when changed) so make sees a fresh target
	tmp = path + '.tmp'
	with open(tmp, 'w', encoding='utf-8') as fp:
		fp.write(text)
	os.replace(tmp, path)


def main(argv):
	if len(argv) != 3:
		sys.stderr.write('usage: gen.py <schema dir> <output dir>\n')
		return 2
	sdir, odir = argv[1], argv[2]
	try:
		names = sorted(n for n in os.listdir(sdir) if n.endswith('.api'))
	except OSError as e:
		sys.stderr.write('gen.py: %s: %s\n' % (sdir, e.strerror))
		return 1
	apis = []
	errors = []
	for n in names:
		try:
			apis.append(parse_file(os.path.join(sdir, n)))
		except SchemaError as e:
			errors.append(str(e))
		except OSError as e:
			errors.append('%s: %s' % (os.path.join(sdir, n), e.strerror))
	# names and keys must be unique across files (C has one namespace)
	by_key, by_struct = {}, {}
	for api in apis:
		if api.key in by_key:
			errors.append('%s:1: api key %d already used by %s' % (api.path, api.key,
				by_key[api.key].path))
		by_key[api.key] = api
		for s in api.structs + [api.request, api.response]:
			if s.name in by_struct:
				o = by_struct[s.name]
				errors.append('%s:%d: struct name "%s" already defined at %s:%d'
					% (api.path, s.line, s.name, o[0], o[1]))
			else:
				by_struct[s.name] = (api.path, s.line)
	if errors:
		for e in errors:
			sys.stderr.write('gen.py: %s\n' % e)
		return 1
	if not apis:
		sys.stderr.write('gen.py: %s: no .api files\n' % sdir)
		return 1
	maxkey = max(a.key for a in apis)
	os.makedirs(odir, exist_ok=True)
	write_if_changed(os.path.join(odir, 'proto_msgs.h'), gen_header(apis, maxkey))
	write_if_changed(os.path.join(odir, 'proto_msgs.c'), gen_source(apis, maxkey))
	write_if_changed(os.path.join(odir, 'proto_sample.h'), gen_sample_header(apis))
	write_if_changed(os.path.join(odir, 'proto_sample.c'), gen_sample_source(apis))
	return 0


if __name__ == '__main__':
	sys.exit(main(sys.argv))
