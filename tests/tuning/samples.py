"""Documents whose every paragraph holds facts no other paragraph holds, in English and in Chinese."""

from __future__ import annotations

import re

NAMES = [
    "Arden",
    "Belmont",
    "Corrie",
    "Dunmore",
    "Elgin",
    "Fenwick",
    "Garrow",
    "Halsey",
    "Inver",
    "Jarrow",
    "Kelso",
    "Lomond",
]
ENGINEERS = [
    "Mara Quill",
    "Tobias Venn",
    "Ilse Marrow",
    "Oren Pike",
    "Dana Wolfe",
    "Piers Hale",
    "Ruth Calder",
    "Simon Frey",
    "Nadia Orme",
    "Felix Grant",
    "Hugo Lind",
    "Vera Stone",
]


def english_document(paragraphs: int = 12) -> str:
    parts = []
    for i in range(paragraphs):
        parts.append(
            f"The {NAMES[i]} lighthouse stands on a rocky headland of the northern coast. It was built in "
            f"{1801 + 7 * i} by the engineer {ENGINEERS[i]}, who also drew the harbour walls below it. Its lamp "
            f"can be seen from {20 + i} miles away on a clear night. Visitors climb {100 + 11 * i} steps to reach "
            f"the gallery, where a small museum shows the brass compasses that sailors carried. The keepers lived "
            f"in a cottage painted {['blue', 'green', 'white', 'red'][i % 4]}, and their logbooks are kept in the "
            f"county archive today."
        )
    return "\n\n".join(parts)


def english_reply(passage: str) -> str:
    """A good question about the first lighthouse of the passage, answered by its engineer's name."""
    name = re.search(r"The (\w+) lighthouse", passage).group(1)  # type: ignore[union-attr]
    engineer = re.search(r"by the engineer (\w+ \w+)", passage).group(1)  # type: ignore[union-attr]
    return f"Q: Who built the {name} lighthouse?\nA: {engineer}\n\nQ: another question\nA: another answer\n"


HAN_NAMES = ["白沙", "青石", "金港", "银湾", "红崖", "黑岛", "紫云", "翠屏", "玉泉", "铁山", "松林", "梅岭"]
HAN_ENGINEERS = [
    "李明远",
    "王秋水",
    "张若虚",
    "陈子昂",
    "刘禹锡",
    "赵孟頫",
    "孙思邈",
    "周敦颐",
    "吴道子",
    "郑板桥",
    "钱学森",
    "冯梦龙",
]


def chinese_document(paragraphs: int = 12) -> str:
    parts = []
    for i in range(paragraphs):
        parts.append(
            f"{HAN_NAMES[i]}灯塔位于北部海岸一处多岩石的岬角上。"
            f"它由工程师{HAN_ENGINEERS[i]}于{1801 + 7 * i}年主持建造，"
            f"他同时设计了灯塔下方的港口防波堤。晴朗的夜晚，{20 + i}公里外都能看见它的灯光。"
            f"游客要爬{100 + 11 * i}级台阶"
            f"才能到达顶层的回廊，那里有一座小型博物馆，展出水手们随身携带的黄铜罗盘。守塔人住在一间小屋里，"
            f"他们的航海日志如今保存在县档案馆中。"
        )
    return "\n\n".join(parts)


def chinese_reply(passage: str) -> str:
    name = re.search(r"(\w\w)灯塔位于", passage).group(1)  # type: ignore[union-attr]
    engineer = re.search(r"由工程师(\w{3})于", passage).group(1)  # type: ignore[union-attr]
    return f"问：{name}灯塔是由哪位工程师主持建造的？\n答：{engineer}\n"
