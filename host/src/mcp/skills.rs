//! MCP's Skills extension (SEP-2640) in rmcp's terms: the workspace's skills
//! (`resources::skills`) as `skills/list`, `skills/get` and
//! `resources/directory/read` results. rmcp 3.9 routes those methods to the
//! handler, checks each entry's shape and fills `resultType` by the
//! revision the client speaks; the caching hints are set here.

use crate::resources::skills::{DirectoryPage, NotServed, SkillEntry, SkillPage};
use rmcp::model::{
    CacheScope, GetSkillResult, ListResourcesResult, ListSkillsResult, MetaObject, ProtocolVersion, Resource, Skill,
    SkillFrontmatter, SkillResource, SkillResources,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

/// How long a client may take a listing or an entry as current: a file that
/// changed meanwhile fails its digest check, and the client asks again
/// (`skills/get`); under `--watch` a change is also told at once.
const TTL_MS: u64 = 60_000;
/// Where a listing names the indexed skills it does not serve, and why.
const NOT_SERVED: &str = "ragbox/notServed";

/// `ttlMs` and `cacheScope` for a client of a revision that defines them
/// (2026-07-28 on): the workspace is the user's, so only their client caches.
fn caching(context: &RequestContext<RoleServer>) -> Option<(u64, CacheScope)> {
    let version = context.protocol_version()?;
    (version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()).then_some((TTL_MS, CacheScope::Private))
}

/// A `skills/list` page.
pub fn list_result(page: SkillPage, context: &RequestContext<RoleServer>) -> Result<ListSkillsResult, McpError> {
    let skills = page.skills.into_iter().map(skill).collect::<Result<_, _>>()?;
    let mut result = ListSkillsResult::with_all_items(skills);
    result.next_cursor = page.next;
    if !page.not_served.is_empty() {
        let named =
            page.not_served.into_iter().map(|NotServed { path, reason }| json!({"path": path, "reason": reason}));
        result.meta = Some(MetaObject(serde_json::Map::from_iter([(NOT_SERVED.to_string(), named.collect())])));
    }
    if let Some((ttl, scope)) = caching(context) {
        result = result.with_ttl_ms(ttl).with_cache_scope(scope);
    }
    Ok(result)
}

/// A `skills/get` answer.
pub fn get_result(entry: SkillEntry, context: &RequestContext<RoleServer>) -> Result<GetSkillResult, McpError> {
    let mut result = GetSkillResult::new(skill(entry)?);
    if let Some((ttl, scope)) = caching(context) {
        result = result.with_ttl_ms(ttl).with_cache_scope(scope);
    }
    Ok(result)
}

/// A `resources/directory/read` page.
pub fn directory_result(page: DirectoryPage) -> ListResourcesResult {
    let children = page
        .children
        .into_iter()
        .map(|child| {
            let resource = Resource::new(child.uri, child.name).with_mime_type(child.mime);
            match child.size {
                Some(size) => resource.with_size(size),
                None => resource,
            }
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(children);
    result.next_cursor = page.next;
    result
}

/// What a request of this extension's must hold, when rmcp could not read
/// its `params` (it then hands the request over as an unknown method's,
/// which would be answered "method not found"); `None` for other methods.
pub fn unread_params(method: &str) -> Option<McpError> {
    let wanted = match method {
        "skills/list" => "`cursor`, when given, is a string (a listing's nextCursor)",
        "skills/get" => "`uri` is a string: the URI of a skill's SKILL.md",
        "resources/directory/read" => "`uri` is a string (a directory's URI) and `cursor`, when given, a string",
        _ => return None,
    };
    Some(McpError::invalid_params(format!("{method}: its params cannot be read: {wanted}"), None))
}

/// One entry, every file with its digest.
fn skill(entry: SkillEntry) -> Result<Skill, McpError> {
    let frontmatter: SkillFrontmatter = serde_json::from_value(Value::Object(entry.frontmatter)).map_err(|e| {
        McpError::internal_error(format!("{}: its frontmatter does not fit an entry: {e}", entry.uri), None)
    })?;
    let files = entry.files.into_iter().map(|f| SkillResource::new(f.uri, f.digest, f.size)).collect();
    Ok(Skill::new(entry.uri, frontmatter, SkillResources::Files(files)))
}
