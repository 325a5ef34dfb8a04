"""The vocabulary the `persons` rows are drawn from: common names, streets and cities.

Realistic text matters beyond looks: the at-rest scan of an unencrypted database must find
ordinary words in its pages, and page-level encryption must hide them, as it would a real
customer table. Everything is ASCII, so a string's length in characters is its length in
bytes on every engine (MariaDB's LENGTH counts bytes, the others characters) and the scan
test's checksum is the same everywhere.
"""

from __future__ import annotations

FIRST_NAMES: tuple[str, ...] = (
    "James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David",
    "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah",
    "Charles", "Karen", "Christopher", "Lisa", "Daniel", "Nancy", "Matthew", "Betty", "Anthony",
    "Margaret", "Mark", "Sandra", "Donald", "Ashley", "Steven", "Kimberly", "Paul", "Emily",
    "Andrew", "Donna", "Joshua", "Michelle", "Kenneth", "Carol", "Kevin", "Amanda", "Brian",
    "Dorothy", "George", "Melissa", "Timothy", "Deborah", "Ronald", "Stephanie", "Edward",
    "Rebecca", "Jason", "Sharon", "Jeffrey", "Laura", "Ryan", "Cynthia", "Jacob", "Kathleen",
    "Gary", "Amy", "Nicholas", "Angela", "Eric", "Shirley", "Jonathan", "Anna", "Stephen",
    "Brenda", "Larry", "Pamela", "Justin", "Emma", "Scott", "Nicole", "Brandon", "Helen",
    "Benjamin", "Samantha", "Samuel", "Katherine", "Gregory", "Christine", "Alexander", "Debra",
    "Patrick", "Rachel", "Frank", "Carolyn", "Raymond", "Janet", "Jack", "Maria", "Dennis",
    "Olivia", "Jerry", "Heather", "Tyler", "Diane", "Aaron", "Julie", "Jose", "Joyce", "Adam",
    "Victoria", "Nathan", "Ruth", "Henry", "Virginia", "Zachary", "Lauren", "Douglas", "Kelly",
    "Peter", "Christina", "Kyle", "Joan", "Noah", "Evelyn", "Ethan", "Judith", "Jeremy", "Andrea",
    "Walter", "Hannah", "Christian", "Megan", "Keith", "Cheryl", "Roger", "Jacqueline", "Terry",
    "Martha", "Austin", "Madison", "Sean", "Teresa", "Gerald", "Gloria", "Carl", "Sara", "Harold",
    "Janice", "Dylan", "Ann", "Arthur", "Kathryn", "Lawrence", "Abigail", "Jordan", "Sophia",
    "Jesse", "Frances", "Bryan", "Jean", "Billy", "Alice", "Bruce", "Judy", "Gabriel", "Isabella",
    "Joe", "Julia", "Logan", "Grace", "Alan", "Amber", "Juan", "Denise", "Albert", "Danielle",
    "Willie", "Marilyn", "Elijah", "Beverly", "Wayne", "Charlotte", "Randy", "Natalie", "Vincent",
    "Theresa", "Mason", "Diana", "Roy", "Brittany", "Ralph", "Doris", "Bobby", "Kayla", "Russell",
    "Alexis", "Bradley", "Lori", "Philip", "Marie", "Eugene", "Ingrid", "Lars", "Astrid", "Sven",
    "Freya", "Mohammed", "Fatima", "Ahmed", "Aisha", "Wei", "Mei", "Hiroshi", "Yuki", "Raj",
    "Priya", "Carlos", "Lucia", "Mateo", "Sofia", "Ivan", "Olga", "Pierre", "Camille", "Giovanni",
)

LAST_NAMES: tuple[str, ...] = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore",
    "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark",
    "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres",
    "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell",
    "Mitchell", "Carter", "Roberts", "Gomez", "Phillips", "Evans", "Turner", "Diaz", "Parker",
    "Cruz", "Edwards", "Collins", "Reyes", "Stewart", "Morris", "Morales", "Murphy", "Cook",
    "Rogers", "Gutierrez", "Ortiz", "Morgan", "Cooper", "Peterson", "Bailey", "Reed", "Kelly",
    "Howard", "Ramos", "Kim", "Cox", "Ward", "Richardson", "Watson", "Brooks", "Chavez", "Wood",
    "James", "Bennett", "Gray", "Mendoza", "Ruiz", "Hughes", "Price", "Alvarez", "Castillo",
    "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jimenez", "Powell", "Jenkins", "Perry",
    "Russell", "Sullivan", "Bell", "Coleman", "Butler", "Henderson", "Barnes", "Gonzales", "Fisher",
    "Vasquez", "Simmons", "Romero", "Jordan", "Patterson", "Alexander", "Hamilton", "Graham",
    "Reynolds", "Griffin", "Wallace", "Moreno", "West", "Cole", "Hayes", "Bryant", "Herrera",
    "Gibson", "Ellis", "Tran", "Medina", "Aguilar", "Stevens", "Murray", "Ford", "Castro",
    "Marshall", "Owens", "Harrison", "Fernandez", "McDonald", "Woods", "Washington", "Kennedy",
    "Wells", "Vargas", "Henry", "Chen", "Freeman", "Webb", "Tucker", "Guzman", "Burns", "Crawford",
    "Olson", "Simpson", "Porter", "Hunter", "Gordon", "Mendez", "Silva", "Shaw", "Snyder", "Mason",
    "Dixon", "Munoz", "Hunt", "Hicks", "Holmes", "Palmer", "Wagner", "Black", "Robertson", "Boyd",
    "Rose", "Stone", "Salazar", "Fox", "Warren", "Mills", "Meyer", "Rice", "Schmidt", "Garza",
    "Daniels", "Ferguson", "Nichols", "Stephens", "Soto", "Weaver", "Ryan", "Gardner", "Payne",
    "Grant", "Dunn", "Kelley", "Spencer", "Hawkins", "Andersson", "Johansson", "Karlsson",
    "Nilsson", "Eriksson", "Larsson", "Olsen", "Hansen", "Mueller", "Schneider", "Fischer",
    "Weber", "Rossi", "Russo", "Ferrari", "Dubois", "Moreau", "Laurent", "Ivanov", "Petrov",
    "Tanaka", "Suzuki", "Wang", "Zhang", "Liu", "Singh", "Kumar", "Khan", "Ali", "Yilmaz",
)

STREETS: tuple[str, ...] = (
    "Main", "Oak", "Pine", "Maple", "Cedar", "Elm", "Washington", "Lake", "Hill", "Park", "Walnut",
    "Sunset", "Lincoln", "Church", "River", "Spring", "Willow", "Highland", "Forest", "Meadow",
    "Jefferson", "Ridge", "Mill", "Adams", "Chestnut", "Franklin", "Madison", "Cherry", "Valley",
    "Center", "North", "South", "Railroad", "Dogwood", "Birch", "Jackson", "Hickory", "Poplar",
    "Laurel", "Magnolia", "Spruce", "Sycamore", "Harbor", "King", "Queen", "Station", "Market",
    "Bridge", "Garden", "Orchard", "Victoria", "Albert", "Kings", "Mountain", "Prospect", "Union",
)

STREET_SUFFIXES: tuple[str, ...] = (
    "Street", "Avenue", "Road", "Lane", "Drive", "Court", "Place", "Boulevard", "Way", "Terrace",
)

CITIES: tuple[str, ...] = (
    "New York", "Los Angeles", "Chicago", "Houston", "Phoenix", "Philadelphia", "San Antonio",
    "San Diego", "Dallas", "Austin", "Toronto", "Montreal", "Vancouver", "Mexico City",
    "Guadalajara", "Bogota", "Lima", "Santiago", "Buenos Aires", "Sao Paulo", "Rio de Janeiro",
    "London", "Manchester", "Dublin", "Paris", "Lyon", "Madrid", "Barcelona", "Lisbon", "Rome",
    "Milan", "Berlin", "Hamburg", "Munich", "Vienna", "Zurich", "Amsterdam", "Brussels",
    "Copenhagen", "Stockholm", "Lulea", "Oslo", "Helsinki", "Warsaw", "Prague", "Budapest",
    "Athens", "Istanbul", "Cairo", "Lagos", "Nairobi", "Johannesburg", "Cape Town", "Casablanca",
    "Dubai", "Tehran", "Karachi", "Mumbai", "Delhi", "Bangalore", "Dhaka", "Bangkok", "Singapore",
    "Jakarta", "Manila", "Hong Kong", "Shanghai", "Beijing", "Seoul", "Tokyo", "Osaka", "Sydney",
    "Melbourne", "Auckland", "Moscow", "Kyiv", "Reykjavik", "Edinburgh", "Krakow", "Riga",
)

GENDERS: tuple[str, ...] = ("Female", "Male")
