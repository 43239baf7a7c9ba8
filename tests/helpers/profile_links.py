"""What every import and sign-in must leave in Redis, read back by SCAN: each subject on at most one
profile, each profile on at most one subject, and every subject link naming a profile that names the
subject back."""


def links_in_redis(redis, prefix: str) -> tuple[dict, dict]:
    """(username -> the subject its profile names, or None; subject -> the username its link names)."""
    owners = {}
    for key in redis.scan_iter(match=f"{prefix}user:*", count=500):
        owner = redis.hget(key, "sub")
        owners[key.decode()[len(f"{prefix}user:{{") : -1]] = owner.decode() if owner else None
    links = {
        key.decode()[len(f"{prefix}sub:") :]: redis.get(key).decode()
        for key in redis.scan_iter(match=f"{prefix}sub:*", count=500)
    }
    return owners, links


def one_subject_one_profile(redis, prefix: str) -> tuple[dict, dict]:
    """links_in_redis(), after asserting that no subject has two profiles and no profile two subjects."""
    owners, links = links_in_redis(redis, prefix)
    subjects = [sub for sub in owners.values() if sub]
    assert len(subjects) == len(set(subjects)), f"a subject named by two profiles: {owners}"
    assert len(links) == len(set(links.values())), f"a profile linked from two subjects: {links}"
    named = {sub: username for username, sub in owners.items() if sub}
    assert links == named, f"subject links {links} disagree with the profiles' subjects {named}"
    return owners, links
